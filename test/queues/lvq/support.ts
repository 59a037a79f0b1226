import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from '../../../src/message/message.js';
import {
  LastValueQueue,
  type LastValueQueueOptions,
} from '../../../src/queues/lvq/last-value-queue.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import type { StorageAdapter } from '../../../src/storage/types.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';

/** The storage kinds every LVQ rule is tested on. */
export const STORAGE_KINDS = ['memory', 'fs'] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

/**
 * One test's storage: `reopen()` closes the adapter and opens a new one over the same data (a
 * process restart for fs; the same adapter for memory, which keeps its data while open).
 */
export class TestStorage {
  storage: StorageAdapter;
  readonly kind: StorageKind;
  readonly dir: string | undefined;

  constructor(kind: StorageKind) {
    this.kind = kind;
    this.dir = kind === 'fs' ? mkdtempSync(join(tmpdir(), 'mqlite-lvq-')) : undefined;
    this.storage = this.#create();
  }

  async reopen(): Promise<StorageAdapter> {
    if (this.dir) {
      await this.storage.close();
      this.storage = this.#create();
    }
    return this.storage;
  }

  /** Bytes of every file under the storage directory (0 for memory). */
  diskBytes(): number {
    return this.dir ? treeBytes(this.dir) : 0;
  }

  async dispose(): Promise<void> {
    await this.storage.close();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  #create(): StorageAdapter {
    return this.dir ? fsStorage({ dir: this.dir, fsync: 'never' }) : memoryStorage();
  }
}

function treeBytes(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const name of readdirSync(path)) total += treeBytes(join(path, name));
  return total;
}

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
