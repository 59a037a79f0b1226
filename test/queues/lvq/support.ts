import { afterEach, beforeEach } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import {
  LastValueQueue,
  type LastValueQueueOptions,
} from '../../../src/queues/lvq/last-value-queue.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import { type StorageKind, TestStorage } from '../../support/test-storage.js';

export { STORAGE_KINDS, storagePerTest, TestStorage } from '../../support/test-storage.js';

/** Opens an LVQ named `prices` keyed by the `symbol` header, on a test storage. */
export function openLvq(
  storage: TestStorage,
  options: Partial<LastValueQueueOptions> = {},
): Promise<LastValueQueue> {
  return LastValueQueue.open({
    name: 'prices',
    key: 'symbol',
    clock: new ManualClock(),
    ...options,
    storage: storage.storage,
  });
}

/**
 * For each test of the enclosing `describe`: a fresh storage of `kind` and the `prices` LVQ
 * opened on it (see {@link openLvq}), both closed after the test. Read the fields inside tests.
 */
export function lvqPerTest(kind: StorageKind): {
  readonly storage: TestStorage;
  readonly queue: LastValueQueue;
} {
  let storage: TestStorage | undefined;
  let queue: LastValueQueue | undefined;
  beforeEach(async () => {
    storage = new TestStorage(kind);
    queue = await openLvq(storage);
  });
  afterEach(async () => {
    await queue?.close();
    await storage?.dispose();
    queue = storage = undefined;
  });
  return {
    get storage(): TestStorage {
      if (storage === undefined) throw new Error('no test is running');
      return storage;
    },
    get queue(): LastValueQueue {
      if (queue === undefined) throw new Error('no test is running');
      return queue;
    },
  };
}

/** Publishes one quote per `symbol:body` spec ("ACME:101"; no colon: a keyless message). */
export async function publishQuotes(queue: LastValueQueue, ...specs: string[]): Promise<void> {
  await Promise.all(
    specs.map((spec) => {
      const colon = spec.indexOf(':');
      if (colon < 0) return queue.publish(spec);
      return queue.publish(spec, { headers: { symbol: spec.slice(0, colon) } });
    }),
  );
}

/** Takes every ready message with `get` (acked) and returns the bodies. */
export async function drain(queue: LastValueQueue): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const message = await queue.get({ noAck: true });
    if (message === null) return out;
    out.push(message.bodyString());
  }
}

export function bodies(messages: readonly Message[]): string[] {
  return messages.map((m) => m.bodyString());
}

/** Lets microtasks and immediates run (browsers wake in a microtask, requeues on an immediate). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
