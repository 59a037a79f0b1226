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
import assert from 'node:assert/strict';
import type {
  JsonValue,
  Log,
  LogCursor,
  LogOptions,
  RecordCodec,
  SegmentInfo,
  StorageAdapter,
} from '../storage/types.js';

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
 * The record codec the suite writes with: strings, encoded as UTF-8, so persistent adapters
 * store real bytes. `byteLength` is the UTF-8 length.
 */
export const testRecordCodec: RecordCodec<string> = {
  byteLength: (record) => Buffer.byteLength(record),
  encode: (record) => encoder.encode(record),
  decode: (bytes) => decoder.decode(bytes),
};
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * {@link testRecordCodec} with `packing`: a record's text up to its first `-` is its envelope
 * (`rec-` for the suite's records), the rest its payload. Every test runs with it too.
 */
export const packedTestRecordCodec: RecordCodec<string> = {
  ...testRecordCodec,
  packing: {
    payload: (record) => encoder.encode(record.slice(envelopeEnd(record))),
    envelope: (record) => record.slice(0, envelopeEnd(record)),
    matches: (record, envelope) =>
      envelopeEnd(record) === envelope.length && record.startsWith(envelope),
    unpack: (envelope, buffer, byteOffset, byteLength) =>
      envelope + decoder.decode(new Uint8Array(buffer, byteOffset, byteLength)),
  },
};
const envelopeEnd = (record: string) => record.indexOf('-') + 1;

/** Records that are bytes, as the queues' messages carry a body. */
const bytesCodec: RecordCodec<Uint8Array> = {
  byteLength: (record) => record.byteLength,
  encode: (record) => record,
  decode: (bytes) => bytes.slice(),
};

/** {@link bytesCodec} with `packing`: the bytes are the payload, with an empty envelope. */
const packedBytesCodec: RecordCodec<Uint8Array> = {
  ...bytesCodec,
  packing: {
    payload: (record) => record,
    envelope: () => new Uint8Array(0),
    matches: () => true,
    unpack: (_, buffer, byteOffset, byteLength) => new Uint8Array(buffer, byteOffset, byteLength),
  },
};

/** {@link bytesCodec} and {@link packedBytesCodec} decoding records as views of the bytes read. */
const viewBytesCodecs = [bytesCodec, packedBytesCodec].map(
  (codec): RecordCodec<Uint8Array> => ({
    ...codec,
    decodeView: (bytes, offset, length) => bytes.subarray(offset, offset + length),
  }),
);

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

const NS = 'ns';

/** Opens logs and reopens them (through the adapter's `reopen`, when given) by name. */
class Harness {
  readonly #reopen: ((adapter: StorageAdapter) => Promise<StorageAdapter>) | undefined;
  readonly #opened = new WeakMap<Log<string>, { ns: string; options: LogOptions }>();

  constructor(
    public adapter: StorageAdapter,
    reopen: ((adapter: StorageAdapter) => Promise<StorageAdapter>) | undefined,
    /** The codec every log of the test is opened with. */
    readonly codec: RecordCodec<string>,
  ) {
    this.#reopen = reopen;
  }

  async log(name = 'log', options: LogOptions = {}, ns = NS): Promise<Log<string>> {
    const log = await (await this.adapter.namespace(ns)).openLog(name, this.codec, options);
    this.#opened.set(log, { ns, options });
    return log;
  }

  /** Reopens the adapter (a no-op without `reopen`). */
  async reopen(): Promise<void> {
    if (this.#reopen) this.adapter = await this.#reopen(this.adapter);
  }

  /** Reopens the adapter and returns `log` opened again (or `log` itself without `reopen`). */
  async reopenLog(log: Log<string>): Promise<Log<string>> {
    if (!this.#reopen) return log;
    const where = this.#opened.get(log);
    assert.ok(where, 'log was not opened through the harness');
    await this.reopen();
    return this.log(log.name, where.options, where.ns);
  }
}

/** Appends `records`, with timestamps `1000 + offset` unless given. */
function fill(log: Log<string>, records: readonly string[], timestamps?: readonly number[]): void {
  records.forEach((r, i) => {
    const offset = log.nextOffset;
    assert.equal(log.append(r, timestamps?.[i] ?? 1000 + offset), offset);
  });
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Records `rec-0001`, ... of 8 bytes each. */
function records(n: number): string[] {
  return range(1, n).map((i) => `rec-${String(i).padStart(4, '0')}`);
}

function readAll(log: Log<string>, from?: number): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  const c = log.cursor(from);
  while (c.next()) out.push([c.offset, c.record]);
  return out;
}

/** Reads every record of `log`, as a reader that drops them does. */
function readAllBytes(log: Log<Uint8Array>): void {
  const cursor = log.cursor();
  while (cursor.next()) void cursor.record;
}

function bytesOf(rs: readonly string[]): number {
  return rs.reduce((sum, r) => sum + testRecordCodec.byteLength(r), 0);
}

function nonEmpty(segments: readonly SegmentInfo[]): SegmentInfo[] {
  return segments.filter((s) => s.count > 0);
}

async function throwsClosed(what: string, fn: () => unknown): Promise<void> {
  let error: unknown;
  try {
    await fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error, `${what} should throw MQLITE_CLOSED`);
  assert.equal((error as { code?: unknown }).code, 'MQLITE_CLOSED', `${what}: ${String(error)}`);
}

/** Every log invariant that `segments()` and the totals must satisfy. */
function checkSegments(
  log: Log<string>,
  expected: ReadonlyMap<number, string>,
  segmentBytes: number,
) {
  const segs = log.segments();
  assert.ok(segs.length >= 1, 'a log always has an active segment');
  for (let i = 1; i < segs.length; i++) {
    assert.ok(segs[i]!.id > segs[i - 1]!.id, 'segment ids ascend');
    assert.ok(segs[i]!.firstOffset > segs[i - 1]!.lastOffset, 'segments are ordered');
  }
  let live = 0;
  let liveBytes = 0;
  for (const s of segs) {
    assert.equal(s.lastOffset - s.firstOffset + 1, s.count);
    if (s.count === 0) {
      assert.ok(Number.isNaN(s.firstTimestamp) && Number.isNaN(s.lastTimestamp));
      continue;
    }
    assert.ok(s.count === 1 || s.bytes <= segmentBytes, `segment ${s.id} exceeds segmentBytes`);
    assert.equal(s.firstTimestamp, log.timestampOf(s.firstOffset));
    assert.equal(s.lastTimestamp, log.timestampOf(s.lastOffset));
    let deleted = 0;
    for (const o of range(s.firstOffset, s.lastOffset)) {
      const r = expected.get(o);
      if (r === undefined) deleted++;
      else {
        live++;
        liveBytes += testRecordCodec.byteLength(r);
      }
    }
    assert.equal(s.deletedCount, deleted, `deletedCount of segment ${s.id}`);
  }
  assert.equal(log.count, live, 'count');
  assert.equal(log.bytes, liveBytes, 'bytes');
  const last = segs[segs.length - 1]!;
  assert.equal(last.lastOffset, log.nextOffset - 1, 'the last segment ends at the log end');
}

const NAMES = [
  'plain',
  'Plain',
  '../x',
  '..',
  '.',
  '/',
  'a/b',
  'a\\b',
  'a\u0000b',
  'con',
  'with space',
  'q:1?*',
  '🐇🥕',
  `${'ü'.repeat(127)}x`, // 255 bytes of UTF-8
  'x'.repeat(255),
];

const tests: Record<string, (h: Harness) => Promise<void>> = {
  async 'offsets start at 1 and are gapless'(h) {
    let log = await h.log();
    assert.equal(log.firstOffset, 1);
    assert.equal(log.nextOffset, 1);
    assert.equal(log.count, 0);
    assert.equal(log.bytes, 0);
    const rs = ['a', 'bb', 'ccc', 'ünï', '🐇'];
    fill(log, rs);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 1);
    assert.equal(log.nextOffset, 6);
    assert.equal(log.count, 5);
    assert.equal(log.bytes, bytesOf(rs));
    for (const [i, r] of rs.entries()) {
      assert.equal(log.get(i + 1), r);
      assert.equal(log.timestampOf(i + 1), 1000 + i + 1);
      assert.equal(log.isDeleted(i + 1), false);
    }
    assert.equal(log.append('next', 2000), 6);
  },

  async 'get and timestampOf give nothing for offsets never written'(h) {
    let log = await h.log();
    fill(log, ['a', 'b']);
    log = await h.reopenLog(log);
    for (const o of [0, -1, 3, 100, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.equal(log.get(o), undefined, `get(${o})`);
      assert.ok(Number.isNaN(log.timestampOf(o)), `timestampOf(${o})`);
      assert.equal(log.isDeleted(o), false, `isDeleted(${o})`);
    }
  },

  async 'a cursor reads from the start, from the middle and from past the end'(h) {
    let log = await h.log('log', { segmentBytes: 24 });
    const rs = records(10);
    fill(log, rs);
    log = await h.reopenLog(log);
    const all = rs.map((r, i): [number, string] => [i + 1, r]);
    assert.deepEqual(readAll(log), all);
    assert.deepEqual(readAll(log, 0), all);
    assert.deepEqual(readAll(log, -5), all);
    assert.deepEqual(readAll(log, 4), all.slice(3));
    assert.deepEqual(readAll(log, 10), all.slice(9));
    assert.deepEqual(readAll(log, 11), []);
    const c = log.cursor(5);
    assert.ok(c.next());
    assert.equal(c.offset, 5);
    assert.equal(c.record, rs[4]);
    assert.equal(c.timestamp, 1005);
  },

  async 'a cursor at the end sees records appended later, across segments'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(3));
    log = await h.reopenLog(log);
    const c = log.cursor();
    assert.deepEqual(
      [c.next(), c.next(), c.next(), c.next(), c.next()],
      [true, true, true, false, false],
    );
    log.append('late-1', 5000);
    assert.ok(c.next());
    assert.deepEqual([c.offset, c.record, c.timestamp], [4, 'late-1', 5000]);
    assert.equal(c.next(), false);
    log.roll();
    log.append('late-2', 5001);
    log.append('late-3-longer-than-a-segment', 5002);
    assert.ok(c.next());
    assert.equal(c.record, 'late-2');
    assert.ok(c.next());
    assert.equal(c.record, 'late-3-longer-than-a-segment');
    assert.equal(c.next(), false);
  },

  async 'seek moves a cursor back, forward and past the end'(h) {
    let log = await h.log('log', { segmentBytes: 24 });
    fill(log, records(10));
    log = await h.reopenLog(log);
    const c = log.cursor();
    c.seek(7);
    assert.ok(c.next());
    assert.equal(c.offset, 7);
    c.seek(2);
    assert.ok(c.next());
    assert.equal(c.offset, 2);
    c.seek(0);
    assert.ok(c.next());
    assert.equal(c.offset, 1);
    c.seek(13);
    assert.equal(c.next(), false);
    fill(log, ['k', 'l', 'm', 'n']);
    assert.ok(c.next());
    assert.deepEqual([c.offset, c.record], [13, 'm']);
  },

  async 'a cursor skips deleted records'(h) {
    let log = await h.log('log', { segmentBytes: 24 });
    const rs = records(10);
    fill(log, rs);
    for (const o of [1, 4, 5, 10]) log.markDeleted(o);
    log = await h.reopenLog(log);
    assert.deepEqual(
      readAll(log).map(([o]) => o),
      [2, 3, 6, 7, 8, 9],
    );
    assert.deepEqual(
      readAll(log, 4).map(([o]) => o),
      [6, 7, 8, 9],
    );
    const c = log.cursor(9);
    assert.ok(c.next());
    log.append('after', 3000);
    assert.ok(c.next());
    assert.deepEqual([c.offset, c.record], [11, 'after']);
  },

  async 'a cursor continues from the oldest retained record after the head is dropped'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(8)); // two records of 8 bytes per segment
    log = await h.reopenLog(log);
    const behind = log.cursor();
    assert.ok(behind.next());
    assert.equal(behind.offset, 1);
    const ahead = log.cursor(7);
    log.dropBefore(5);
    assert.equal(log.firstOffset, 5);
    assert.ok(behind.next());
    assert.equal(behind.offset, 5);
    assert.ok(ahead.next());
    assert.equal(ahead.offset, 7);
    const fresh = log.cursor(2);
    assert.ok(fresh.next());
    assert.equal(fresh.offset, 5);
    log.truncate();
    log.append('new', 9000);
    assert.ok(behind.next());
    assert.deepEqual([behind.offset, behind.record], [9, 'new']);
  },

  async 'segments() summarizes every segment'(h) {
    const segmentBytes = 30;
    let log = await h.log('log', { segmentBytes });
    const rs = records(20);
    const expected = new Map(rs.map((r, i) => [i + 1, r]));
    fill(log, rs);
    log.markDeleted(2);
    log.markDeleted(9);
    expected.delete(2);
    expected.delete(9);
    checkSegments(log, expected, segmentBytes);
    const before = nonEmpty(log.segments()).map((s) => [s.firstOffset, s.lastOffset, s.bytes]);
    assert.ok(before.length >= 5, 'segments of 30 bytes hold at most three 8-byte records');
    log = await h.reopenLog(log);
    checkSegments(log, expected, segmentBytes);
    const after = nonEmpty(log.segments()).map((s) => [s.firstOffset, s.lastOffset, s.bytes]);
    assert.deepEqual(after, before);
    for (const s of nonEmpty(log.segments())) {
      assert.equal(s.bytes, bytesOf(rs.slice(s.firstOffset - 1, s.lastOffset)));
    }
    const more = records(4).map((r) => `${r}!`);
    fill(log, more);
    for (const [i, r] of more.entries()) expected.set(21 + i, r);
    checkSegments(log, expected, segmentBytes);
  },

  async 'offsetAt finds the first record at or after a timestamp'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    assert.equal(log.offsetAt(0), 1);
    const ts = [10, 10, 10, 20, 20, 20, 20, 30, 40, 40, 50];
    fill(log, records(ts.length), ts);
    log = await h.reopenLog(log);
    const cases: Array<[number, number]> = [
      [Number.NEGATIVE_INFINITY, 1],
      [0, 1],
      [10, 1],
      [11, 4],
      [20, 4],
      [25, 8],
      [30, 8],
      [40, 9],
      [45, 11],
      [50, 11],
      [51, 12],
      [Number.POSITIVE_INFINITY, 12],
    ];
    for (const [t, o] of cases) assert.equal(log.offsetAt(t), o, `offsetAt(${t})`);
    log.dropBefore(5);
    assert.equal(log.offsetAt(0), log.firstOffset);
    assert.equal(log.offsetAt(40), 9);
    log.roll();
    assert.equal(log.offsetAt(51), log.nextOffset);
  },

  async 'dropBefore drops whole head segments, never the active one, and counts live records'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    const rs = records(9); // segments [1,2] [3,4] [5,6] [7,8] [9]
    fill(log, rs);
    log.markDeleted(2);
    assert.equal(log.dropBefore(1), 0, 'no segment ends before offset 1');
    assert.equal(log.dropBefore(4), 1, 'only [1,2] ends before 4; 2 was deleted');
    assert.equal(log.firstOffset, 3);
    assert.equal(log.get(1), undefined);
    assert.ok(Number.isNaN(log.timestampOf(1)));
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 3);
    assert.equal(log.count, 7);
    assert.equal(log.bytes, bytesOf(rs.slice(2)));
    assert.equal(log.dropBefore(1000), 6, 'everything but the active segment');
    assert.equal(log.firstOffset, 9);
    assert.equal(log.count, 1);
    assert.equal(log.get(9), rs[8]);
    assert.equal(log.nextOffset, 10);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 9);
    assert.deepEqual(readAll(log), [[9, rs[8]]]);
  },

  async 'markDeleted is idempotent and ignores unknown offsets'(h) {
    let log = await h.log();
    const rs = records(5);
    fill(log, rs);
    log.markDeleted(3);
    log.markDeleted(3);
    for (const o of [0, -1, 6, 1000, 2.5, Number.NaN]) log.markDeleted(o);
    assert.equal(log.count, 4);
    assert.equal(log.bytes, bytesOf(rs) - bytesOf([rs[2]!]));
    log = await h.reopenLog(log);
    log.markDeleted(3);
    assert.equal(log.count, 4);
    assert.equal(log.bytes, bytesOf(rs) - bytesOf([rs[2]!]));
    assert.equal(log.isDeleted(3), true);
    assert.equal(log.isDeleted(2), false);
    assert.equal(log.get(3), undefined);
    assert.equal(log.get(4), rs[3]);
    assert.equal(log.nextOffset, 6);
  },

  async 'segments whose records are all deleted are reclaimed, except the active one'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(7)); // segments [1,2] [3,4] [5,6] [7]
    for (const o of [3, 4]) log.markDeleted(o);
    assert.ok(!log.segments().some((s) => s.firstOffset <= 3 && s.lastOffset >= 3));
    for (const o of [1, 2]) log.markDeleted(o);
    assert.equal(log.firstOffset, 5);
    log.markDeleted(7);
    const active = log.segments().at(-1)!;
    assert.equal(active.lastOffset, 7, 'the active segment stays');
    assert.equal(active.deletedCount, active.count);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 5);
    assert.equal(log.count, 2);
    assert.deepEqual(readAll(log), [
      [5, 'rec-0005'],
      [6, 'rec-0006'],
    ]);
    assert.equal(log.get(3), undefined);
    assert.equal(log.append('x', 1), 8);
  },

  async 'roll starts a new segment so every earlier one can be dropped'(h) {
    let log = await h.log();
    fill(log, ['a', 'b', 'c']);
    log.roll();
    fill(log, ['d', 'e']);
    const segs = nonEmpty(log.segments());
    assert.equal(segs.length, 2);
    assert.deepEqual(
      segs.map((s) => [s.firstOffset, s.lastOffset, s.count]),
      [
        [1, 3, 3],
        [4, 5, 2],
      ],
    );
    log.roll();
    assert.equal(log.dropBefore(log.nextOffset), 5);
    assert.equal(log.count, 0);
    assert.equal(log.firstOffset, 6);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 6);
    assert.equal(log.nextOffset, 6);
    assert.equal(log.append('f', 1), 6);
  },

  async 'truncate drops every record and offsets keep counting'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(5));
    log.truncate();
    assert.equal(log.count, 0);
    assert.equal(log.bytes, 0);
    assert.equal(log.firstOffset, 6);
    assert.equal(log.nextOffset, 6);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 6);
    assert.equal(log.nextOffset, 6);
    assert.deepEqual(readAll(log), []);
    assert.equal(log.append('z', 1), 6);
    assert.deepEqual(readAll(log, 0), [[6, 'z']]);
    assert.equal(log.get(5), undefined);
  },

  async 'fifty thousand appends keep their order and content'(h) {
    let log = await h.log('log', { segmentBytes: 64 * 1024 });
    const n = 50_000;
    for (let i = 1; i <= n; i++) log.append(`record ${i} ${'x'.repeat(i % 17)}`, 1_000_000 + i);
    await log.sync();
    log = await h.reopenLog(log);
    assert.equal(log.nextOffset, n + 1);
    assert.equal(log.count, n);
    const c = log.cursor();
    let expected = 1;
    while (c.next()) {
      if (c.offset !== expected || c.record !== `record ${expected} ${'x'.repeat(expected % 17)}`) {
        assert.fail(`offset ${expected}: got ${c.offset} ${c.record}`);
      }
      expected++;
    }
    assert.equal(expected, n + 1);
    assert.equal(log.get(31_337), `record 31337 ${'x'.repeat(31_337 % 17)}`);
    assert.equal(log.offsetAt(1_000_000 + 40_000), 40_000);
    assert.ok(log.segments().length > 1);
  },

  async 'sync resolves on logs, metadata and namespaces'(h) {
    const log = await h.log();
    log.append('a', 1);
    const ns = await h.adapter.namespace(NS);
    ns.meta.set('k', 1);
    await log.sync();
    await ns.meta.sync();
    await ns.sync();
  },

  async 'invalid arguments are typed errors that change nothing'(h) {
    const log = await h.log();
    log.append('a', 1);
    assert.throws(() => log.append('b', Number.NaN), TypeError);
    assert.equal(log.nextOffset, 2);
    const ns = await h.adapter.namespace(NS);
    for (const segmentBytes of [0, -1, 1.5, Number.NaN]) {
      await assert.rejects(async () => ns.openLog('bad', h.codec, { segmentBytes }), RangeError);
    }
    assert.deepEqual(await ns.listLogs(), ['log']);
  },

  async 'metadata is set, read, overwritten and deleted'(h) {
    let ns = await h.adapter.namespace(NS);
    const value = {
      args: { 'x-max-length': 10, 'x-queue-type': 'stream' },
      list: [1, 'two', null, true],
    };
    ns.meta.set('queue', value);
    ns.meta.set('offset/consumer-1', 42);
    ns.meta.set('gone', 'soon');
    ns.meta.set('overwritten', 1);
    ns.meta.set('overwritten', [2]);
    ns.meta.delete('gone');
    ns.meta.delete('never-there');
    assert.equal(ns.meta.get('gone'), undefined);
    await ns.meta.sync();
    await h.reopen();
    ns = await h.adapter.namespace(NS);
    assert.deepEqual(ns.meta.get('queue'), value);
    assert.equal(ns.meta.get('offset/consumer-1'), 42);
    assert.deepEqual(ns.meta.get('overwritten'), [2]);
    assert.equal(ns.meta.get('gone'), undefined);
    assert.equal(ns.meta.get('missing'), undefined);
  },

  async 'metadata entries come in key order, filtered by prefix'(h) {
    let ns = await h.adapter.namespace(NS);
    for (const key of ['b/2', 'a', 'b/10', 'c', 'b/1', 'b', 'ba']) ns.meta.set(key, key);
    ns.meta.delete('c');
    await h.reopen();
    ns = await h.adapter.namespace(NS);
    assert.deepEqual(
      [...ns.meta.entries()].map(([k]) => k),
      ['a', 'b', 'b/1', 'b/10', 'b/2', 'ba'],
    );
    assert.deepEqual(
      [...ns.meta.entries('b/')],
      [
        ['b/1', 'b/1'],
        ['b/10', 'b/10'],
        ['b/2', 'b/2'],
      ],
    );
    assert.deepEqual([...ns.meta.entries('zzz')], []);
    assert.deepEqual(
      [...ns.meta.entries('')].map(([k]) => k),
      ['a', 'b', 'b/1', 'b/10', 'b/2', 'ba'],
    );
  },

  async 'metadata cannot be changed through the values passed in or read back'(h) {
    const ns = await h.adapter.namespace(NS);
    const value = { list: [1, 2], nested: { n: 1 } };
    ns.meta.set('k', value);
    value.list.push(3);
    value.nested.n = 2;
    assert.deepEqual(ns.meta.get('k'), { list: [1, 2], nested: { n: 1 } });
    const read = ns.meta.get('k') as { list: number[]; nested: { n: number } };
    try {
      read.list.push(4);
      read.nested.n = 5;
    } catch {
      // Frozen values throw in strict mode; copies accept the write. Either way nothing changes.
    }
    assert.deepEqual(ns.meta.get('k'), { list: [1, 2], nested: { n: 1 } });
    const [[, listed]] = [...ns.meta.entries('k')] as [[string, { list: number[] }]];
    try {
      listed.list.push(5);
    } catch {}
    assert.deepEqual(ns.meta.get('k'), { list: [1, 2], nested: { n: 1 } });
  },

  async 'metadata refuses values that are not JSON and keeps the old value'(h) {
    const ns = await h.adapter.namespace(NS);
    ns.meta.set('k', 'old');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const bad: unknown[] = [
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      () => 1,
      Symbol('s'),
      10n,
      new Date(0),
      new Map(),
      { nested: [undefined] },
      cyclic,
    ];
    for (const value of bad) {
      assert.throws(() => ns.meta.set('k', value as JsonValue), TypeError, String(value));
      assert.throws(() => ns.meta.set('new', value as JsonValue), TypeError, String(value));
    }
    assert.equal(ns.meta.get('k'), 'old');
    assert.equal(ns.meta.get('new'), undefined);
  },

  async 'a persistent or packing log keeps nothing of an appended record'(h) {
    const codec = h.codec.packing === undefined ? bytesCodec : packedBytesCodec;
    const { persistent, packing } = h.adapter.supports;
    // Persistent adapters encode every record; packing ones copy the payload of packed records.
    if (!persistent && !(packing && codec.packing !== undefined)) return;
    const ns = await h.adapter.namespace(NS);
    const log = await ns.openLog('bytes', codec);
    const record = new TextEncoder().encode('original');
    log.append(record, 1);
    record.fill(0x78);
    const stored = new TextDecoder();
    assert.equal(stored.decode(log.get(1)), 'original');
    const cursor = log.cursor();
    assert.ok(cursor.next());
    assert.equal(stored.decode(cursor.record), 'original');
    await log.sync();
    await h.reopen();
    const again = await (await h.adapter.namespace(NS)).openLog('bytes', codec);
    assert.equal(stored.decode(again.get(1)), 'original');
  },

  async 'records decoded as views of the bytes read stay as they were read'(h) {
    const codec = viewBytesCodecs[h.codec.packing === undefined ? 0 : 1]!;
    const ns = await h.adapter.namespace(NS);
    let log = await ns.openLog('views', codec, { segmentBytes: 2048 });
    // Records of distinct bytes over several segments, one bigger than any read buffer.
    const expected = new Map<number, Uint8Array>();
    const add = (length: number) => {
      const record = new Uint8Array(length);
      for (let i = 0; i < length; i++) record[i] = (log.nextOffset * 7 + i) & 0xff;
      expected.set(log.append(record, 1000 + log.nextOffset), record.slice());
    };
    for (let i = 0; i < 300; i++) add(1 + ((i * 37) % 120));
    add(600 * 1024);
    for (let i = 0; i < 50; i++) add(64);
    await log.sync();
    await h.reopen();
    log = await (await h.adapter.namespace(NS)).openLog('views', codec);
    const kept = new Map<number, Uint8Array>();
    const keep = (cursor: LogCursor<Uint8Array>) => {
      while (cursor.next()) kept.set(cursor.offset, cursor.record);
    };
    keep(log.cursor());
    // Reading on: the same log by other cursors, seeks, point reads, frames still in the
    // write buffer, a head drop and the deletions that compact a segment.
    for (let i = 0; i < 3; i++) readAllBytes(log);
    const cursor = log.cursor();
    for (const offset of [200, 5, 301, 1]) {
      cursor.seek(offset);
      assert.ok(cursor.next());
      kept.set(cursor.offset, cursor.record);
    }
    for (let i = 0; i < 40; i++) add(90);
    keep(log.cursor(340));
    await log.sync();
    for (let i = 0; i < 40; i++) add(90);
    readAllBytes(log);
    for (const offset of [3, 150, 350]) log.get(offset);
    for (let offset = 100; offset < 200; offset++) log.markDeleted(offset);
    log.dropBefore(60);
    await log.sync();
    readAllBytes(log);
    await h.reopen();
    readAllBytes(await (await h.adapter.namespace(NS)).openLog('views', codec));
    assert.equal(kept.size, expected.size - 40);
    for (const [offset, record] of kept) {
      assert.deepEqual(record, expected.get(offset), `record ${offset}`);
    }
  },

  async 'namespaces of any name are kept apart'(h) {
    for (const name of NAMES) {
      const ns = await h.adapter.namespace(name);
      assert.equal(ns.name, name);
      ns.meta.set('name', name);
      const log = await ns.openLog('log', h.codec);
      log.append(`in ${name}`, 1);
      await ns.sync();
    }
    await h.reopen();
    assert.deepEqual(await h.adapter.listNamespaces(), [...NAMES].sort());
    for (const name of NAMES) {
      const ns = await h.adapter.namespace(name);
      assert.equal(ns.meta.get('name'), name);
      assert.deepEqual([...ns.meta.entries()], [['name', name]]);
      assert.deepEqual(await ns.listLogs(), ['log']);
      const log = await ns.openLog('log', h.codec);
      assert.deepEqual(readAll(log), [[1, `in ${name}`]]);
    }
  },

  async 'logs of any name are kept apart within a namespace'(h) {
    const ns = await h.adapter.namespace(NS);
    for (const name of NAMES) {
      const log = await ns.openLog(name, h.codec);
      assert.equal(log.name, name);
      fill(log, [name, name]);
    }
    await h.reopen();
    const again = await h.adapter.namespace(NS);
    assert.deepEqual(await again.listLogs(), [...NAMES].sort());
    for (const name of NAMES) {
      const log = await again.openLog(name, h.codec);
      assert.deepEqual(readAll(log), [
        [1, name],
        [2, name],
      ]);
    }
  },

  async 'an empty namespace and an empty log exist once created'(h) {
    const ns = await h.adapter.namespace('empty');
    await ns.openLog('empty-log', h.codec);
    await h.reopen();
    assert.deepEqual(await h.adapter.listNamespaces(), ['empty']);
    assert.deepEqual(await (await h.adapter.namespace('empty')).listLogs(), ['empty-log']);
  },

  async 'deleteNamespace removes its logs and metadata'(h) {
    const doomed = await h.adapter.namespace('doomed');
    doomed.meta.set('k', 1);
    const log = await doomed.openLog('log', h.codec);
    log.append('a', 1);
    const kept = await h.adapter.namespace('kept');
    kept.meta.set('k', 2);
    await h.adapter.deleteNamespace('doomed');
    await h.adapter.deleteNamespace('never-existed');
    await throwsClosed('append to a log of a deleted namespace', () => log.append('b', 2));
    assert.deepEqual(await h.adapter.listNamespaces(), ['kept']);
    await h.reopen();
    assert.deepEqual(await h.adapter.listNamespaces(), ['kept']);
    const reborn = await h.adapter.namespace('doomed');
    assert.equal(reborn.meta.get('k'), undefined);
    assert.deepEqual(await reborn.listLogs(), []);
    const fresh = await reborn.openLog('log', h.codec);
    assert.equal(fresh.nextOffset, 1);
    assert.equal(fresh.count, 0);
    assert.equal((await h.adapter.namespace('kept')).meta.get('k'), 2);
  },

  async 'listLogs lists every log and deleteLog removes one'(h) {
    const ns = await h.adapter.namespace(NS);
    const a = await ns.openLog('a', h.codec);
    const b = await ns.openLog('b', h.codec);
    fill(a, ['1', '2']);
    fill(b, ['3']);
    assert.deepEqual(await ns.listLogs(), ['a', 'b']);
    await ns.deleteLog('a');
    await ns.deleteLog('never-existed');
    await throwsClosed('append to a deleted log', () => a.append('x', 1));
    assert.deepEqual(await ns.listLogs(), ['b']);
    await h.reopen();
    const again = await h.adapter.namespace(NS);
    assert.deepEqual(await again.listLogs(), ['b']);
    const reborn = await again.openLog('a', h.codec);
    assert.equal(reborn.nextOffset, 1);
    assert.deepEqual(readAll(await again.openLog('b', h.codec)), [[1, '3']]);
  },

  async 'opening an open log returns the same instance; a closed one opens afresh'(h) {
    const ns = await h.adapter.namespace(NS);
    const first = await ns.openLog('log', h.codec);
    assert.equal(await ns.openLog('log', h.codec), first);
    fill(first, ['a', 'b']);
    await first.close();
    await first.close();
    await throwsClosed('append to a closed log', () => first.append('c', 1));
    const second = await ns.openLog('log', h.codec);
    assert.notEqual(second, first);
    assert.deepEqual(readAll(second), [
      [1, 'a'],
      [2, 'b'],
    ]);
    assert.equal(await (await h.adapter.namespace(NS)).openLog('log', h.codec), second);
  },

  async 'a closed log throws MQLITE_CLOSED'(h) {
    const log = await h.log();
    fill(log, ['a', 'b']);
    const cursor = log.cursor();
    await log.close();
    const calls: Record<string, () => unknown> = {
      append: () => log.append('c', 1),
      sync: () => log.sync(),
      get: () => log.get(1),
      timestampOf: () => log.timestampOf(1),
      cursor: () => log.cursor(),
      'cursor.next': () => cursor.next(),
      segments: () => log.segments(),
      offsetAt: () => log.offsetAt(0),
      dropBefore: () => log.dropBefore(2),
      markDeleted: () => log.markDeleted(1),
      isDeleted: () => log.isDeleted(1),
      roll: () => log.roll(),
      truncate: () => log.truncate(),
    };
    for (const [name, call] of Object.entries(calls)) await throwsClosed(name, call);
  },

  async 'a closed namespace throws MQLITE_CLOSED'(h) {
    const ns = await h.adapter.namespace(NS);
    const log = await ns.openLog('log', h.codec);
    ns.meta.set('k', 1);
    await ns.close();
    await ns.close();
    await throwsClosed('openLog', () => ns.openLog('log', h.codec));
    await throwsClosed('listLogs', () => ns.listLogs());
    await throwsClosed('deleteLog', () => ns.deleteLog('log'));
    await throwsClosed('meta.get', () => ns.meta.get('k'));
    await throwsClosed('meta.set', () => ns.meta.set('k', 2));
    await throwsClosed('meta.entries', () => ns.meta.entries());
    await throwsClosed('log.append', () => log.append('a', 1));
    const again = await h.adapter.namespace(NS);
    assert.notEqual(again, ns);
    assert.equal(again.meta.get('k'), 1);
  },

  async 'a closed adapter throws MQLITE_CLOSED and closing again is harmless'(h) {
    const ns = await h.adapter.namespace(NS);
    const log = await ns.openLog('log', h.codec);
    log.append('a', 1);
    await h.adapter.close();
    await h.adapter.close();
    await throwsClosed('namespace', () => h.adapter.namespace(NS));
    await throwsClosed('listNamespaces', () => h.adapter.listNamespaces());
    await throwsClosed('deleteNamespace', () => h.adapter.deleteNamespace(NS));
    await throwsClosed('openLog', () => ns.openLog('log', h.codec));
    await throwsClosed('meta.get', () => ns.meta.get('k'));
    await throwsClosed('log.append', () => log.append('b', 2));
    await throwsClosed('log.get', () => log.get(1));
  },
};
