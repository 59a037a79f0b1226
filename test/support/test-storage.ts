import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsStorage } from '../../src/storage/fs/index.js';
import { memoryStorage } from '../../src/storage/memory.js';
import type { StorageAdapter } from '../../src/storage/types.js';

/** The storage kinds every queue rule is tested on. */
export const STORAGE_KINDS = ['memory', 'fs'] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

/**
 * One test's storage: `storage` is the adapter queues open on; `reopen()` closes it and opens a
 * new adapter over the same data (a process restart for fs; the same adapter for memory, which
 * keeps its data while open).
 */
export class TestStorage {
  storage: StorageAdapter;
  readonly kind: StorageKind;
  readonly #dir: string | undefined;
  readonly #segmentBytes: number | undefined;

  /** @param segmentBytes default segment size of the adapter (small ones make tests roll). */
  constructor(kind: StorageKind, segmentBytes?: number) {
    this.kind = kind;
    this.#segmentBytes = segmentBytes;
    this.#dir = kind === 'fs' ? mkdtempSync(join(tmpdir(), 'mqlite-test-')) : undefined;
    this.storage = this.#create();
  }

  get persistent(): boolean {
    return this.kind === 'fs';
  }

  /** Directory of the fs adapter (undefined for memory). */
  get dir(): string | undefined {
    return this.#dir;
  }

  async reopen(): Promise<StorageAdapter> {
    if (this.kind === 'fs') {
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
    const segmentBytes =
      this.#segmentBytes === undefined ? {} : { segmentBytes: this.#segmentBytes };
    return this.#dir
      ? fsStorage({ dir: this.#dir, fsync: 'never', ...segmentBytes })
      : memoryStorage(segmentBytes);
  }
}
