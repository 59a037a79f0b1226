/**
 * The storage conformance suite: one set of tests every `StorageAdapter` must pass, runnable
 * with any `(name, fn)` test runner.
 *
 * ```ts
 * import { test } from 'vitest';
 * import { storageConformance } from 'mqlite/testing';
 *
 * storageConformance({ test, factory: () => memoryStorage() });
 * storageConformance({
 *   test,
 *   factory: () => fsStorage({ dir: freshDir() }),
 *   reopen: async (old) => { await old.close(); return fsStorage({ dir: sameDir(old) }); },
 *   prefix: 'fs reopened: ',
 * });
 * ```
 */
import type { RecordCodec, StorageAdapter } from '../../storage/types.js';
import { appendTests } from './appends.js';
import { closingTests } from './closing.js';
import { packedTestRecordCodec, testRecordCodec } from './codecs.js';
import { cursorTests } from './cursors.js';
import { type ConformanceTests, Harness } from './harness.js';
import { metadataTests } from './metadata.js';
import { namespaceTests } from './namespaces.js';
import { recordBytesTests } from './record-bytes.js';
import { retentionTests } from './retention.js';
import { segmentTests } from './segments.js';

export { packedTestRecordCodec, testRecordCodec } from './codecs.js';

/** A test runner's registration function, e.g. vitest's or node:test's `test`. */
export type ConformanceTest = (name: string, fn: () => Promise<void>) => unknown;

/** Options of {@link storageConformance}. */
export interface StorageConformanceOptions {
  /** Registers one test. Each test is independent and may run concurrently with none other. */
  readonly test: ConformanceTest;
  /** Returns a fresh, empty adapter. Called once per test; the suite closes what it gets. */
  readonly factory: () => StorageAdapter | Promise<StorageAdapter>;
  /**
   * For persistent adapters: closes `adapter` and returns a new adapter over the same data.
   * When given, every test reopens the adapter between writing and checking (namespaces and
   * logs are opened again by name, with the same codec and options), so each read-side assertion
   * is made against what was stored, not against in-memory state.
   */
  readonly reopen?: (adapter: StorageAdapter) => Promise<StorageAdapter>;
  /** Prepended to every test name (e.g. `'fs: '`), so several runs can share a file. */
  readonly prefix?: string;
}

/**
 * Registers the conformance tests. The contract they pin down, beyond the TSDoc of
 * `src/storage/types.ts`:
 *
 * - Offsets start at 1 and are gapless; `get`/`timestampOf` of an offset that is not retained,
 *   deleted, or not a positive integer give `undefined`/`NaN` (timestamps are integers here).
 * - A segment is started when the active one holds at least one record and the next record would
 *   take its `bytes` past `segmentBytes`; `roll()` starts one explicitly. Segments are reported
 *   oldest first, with ascending ids; after a reopen an empty trailing segment is allowed.
 * - `offsetAt(t)` gives the first retained record (deleted or not) with timestamp ≥ t.
 * - Segments whose records are all deleted are reclaimed unless active; marks survive a reopen.
 * - Metadata values are validated (JSON only: a `TypeError` otherwise, nothing stored) and
 *   isolated (mutating what was passed in or read back changes nothing stored); `entries`
 *   lists keys in string order.
 * - Names of namespaces and logs are any string: `'../x'`, `'/'`, NUL, 255-byte UTF-8, emoji.
 * - After `close()`, calls on the adapter, its namespaces, logs, metadata and cursors throw (or
 *   reject with) an error whose `code` is `MQLITE_CLOSED`; `close()` itself is idempotent.
 * - Invalid arguments: a NaN timestamp is a `TypeError`, `segmentBytes` < 1 a `RangeError`.
 */
export function storageConformance(options: StorageConformanceOptions): void {
  const prefix = options.prefix ?? '';
  const t = (name: string, codec: RecordCodec<string>, body: (h: Harness) => Promise<void>) => {
    options.test(`${prefix}${name}`, async () => {
      const h = new Harness(await options.factory(), options.reopen, codec);
      try {
        await body(h);
      } finally {
        await h.adapter.close();
      }
    });
  };
  for (const [name, body] of Object.entries(tests)) {
    t(name, testRecordCodec, body);
    t(`packed records: ${name}`, packedTestRecordCodec, body);
  }
}

/** Every area of the storage interface the suite proves, in the order they run. */
const tests: ConformanceTests = {
  ...appendTests,
  ...cursorTests,
  ...segmentTests,
  ...retentionTests,
  ...metadataTests,
  ...recordBytesTests,
  ...namespaceTests,
  ...closingTests,
};
