import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Message } from '../../../src/message/message.js';
import { StreamQueue, type StreamQueueOptions } from '../../../src/queues/stream/stream-queue.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import type { StorageAdapter } from '../../../src/storage/types.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';

/** The storage kinds every stream rule is tested on. */
export const STORAGE_KINDS = ['memory', 'fs'] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

/**
 * One test's storage: `storage` is the adapter streams open on; `reopen()` closes it and opens a
 * new adapter over the same data (a process restart for fs; the same adapter for memory, which
 * keeps its data while open).
 */
export class TestStorage {
  storage: StorageAdapter;
  readonly #kind: StorageKind;
  readonly #dir: string | undefined;

  constructor(kind: StorageKind) {
    this.#kind = kind;
    this.#dir = kind === 'fs' ? mkdtempSync(join(tmpdir(), 'mqlite-stream-')) : undefined;
    this.storage = this.#create();
  }

  get persistent(): boolean {
    return this.#kind === 'fs';
  }

  async reopen(): Promise<StorageAdapter> {
    if (this.#kind === 'fs') {
      await this.storage.close();
      this.storage = this.#create();
    }
    return this.storage;
  }

  async dispose(): Promise<void> {
    await this.storage.close();
    if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
  }

  #create(): StorageAdapter {
    return this.#dir ? fsStorage({ dir: this.#dir }) : memoryStorage();
  }
}

/** Opens a stream on a test storage with a manual clock. */
export function openStream(
  storage: TestStorage,
  options: Partial<StreamQueueOptions> & { clock?: ManualClock } = {},
): Promise<StreamQueue> {
  return StreamQueue.open({
    name: 'events',
    clock: options.clock ?? new ManualClock(),
    ...options,
    storage: storage.storage,
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
