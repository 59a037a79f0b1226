import { afterEach, beforeEach } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import { StreamQueue, type StreamQueueOptions } from '../../../src/queues/stream/stream-queue.js';
import type { Log, LogCursor, Namespace, StorageAdapter } from '../../../src/storage/types.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import { type StorageKind, TestStorage } from '../../support/test-storage.js';

export { STORAGE_KINDS, type StorageKind, TestStorage } from '../../support/test-storage.js';

/** Opens a stream on a test storage (or on `options.storage`) with a manual clock. */
export function openStream(
  storage: TestStorage,
  options: Partial<StreamQueueOptions> & { clock?: ManualClock } = {},
): Promise<StreamQueue> {
  return StreamQueue.open({
    name: 'events',
    clock: options.clock ?? new ManualClock(),
    ...options,
    storage: options.storage ?? storage.storage,
  });
}

/** Publishes `n` messages with bodies `m<i>` (i from `from`), resolving when all are stored. */
export async function publishMany(stream: StreamQueue, n: number, from = 1): Promise<void> {
  const all: Promise<void>[] = [];
  for (let i = from; i < from + n; i++) all.push(stream.publish(`m${i}`));
  await Promise.all(all);
}

/** Lets microtasks and immediates run (wake-ups after publish happen in a microtask). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The offsets of delivered messages, from the `x-stream-offset` header. */
export function offsetsOf(messages: readonly Message[]): number[] {
  return messages.map((m) => m.properties.headers?.['x-stream-offset'] as number);
}

/** Lets the event loop turn until `done()` holds (a consumer yields after a long turn). */
export async function settleUntil(done: () => boolean, turns = 100): Promise<void> {
  for (let i = 0; i < turns && !done(); i++) await settle();
}

/** Records read from the logs of a `countReads` storage, by cursor steps or by offset. */
export interface ReadCounter {
  records: number;
}

/** Forwards every property to `target`, binding methods to it (private fields need that). */
function forward<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(t, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof T];
      const value = Reflect.get(t, key, t);
      return typeof value === 'function' ? value.bind(t) : value;
    },
  });
}

function countingCursor<T>(cursor: LogCursor<T>, counter: ReadCounter): LogCursor<T> {
  return forward(cursor, {
    next() {
      const found = cursor.next();
      if (found) counter.records++;
      return found;
    },
  });
}

function countingLog<T>(log: Log<T>, counter: ReadCounter): Log<T> {
  return forward(log, {
    cursor: (offset?: number) => countingCursor(log.cursor(offset), counter),
    get(offset: number) {
      counter.records++;
      return log.get(offset);
    },
  });
}

/**
 * A view of `storage` that counts the records read from its logs: what shows that a reader
 * skipped messages without being timed.
 */
export function countReads(storage: StorageAdapter, counter: ReadCounter): StorageAdapter {
  const wrapNamespace = (ns: Namespace): Namespace =>
    forward(ns, {
      openLog: async (name, codec, options) =>
        countingLog(await ns.openLog(name, codec, options), counter),
    });
  return forward(storage, {
    namespace: async (name: string) => wrapNamespace(await storage.namespace(name)),
  });
}

/**
 * Gives every test of the enclosing `describe` a fresh storage of `kind` and a stream on it, and
 * closes both after the test. `assign` receives them; `current` returns the stream to close (a
 * test may replace it, e.g. with one opened on a wrapped storage).
 */
export function streamPerTest(
  kind: StorageKind,
  assign: (fresh: { storage: TestStorage; stream: StreamQueue }) => void,
  current: () => StreamQueue,
): void {
  let storage: TestStorage | undefined;
  beforeEach(async () => {
    storage = new TestStorage(kind);
    assign({ storage, stream: await openStream(storage) });
  });
  afterEach(async () => {
    await current().close();
    await storage?.dispose();
  });
}
