import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { abandonFsStorage, fsStorage } from '../../src/storage/fs/index.js';
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

  /** Bytes of every file under the storage directory (0 for memory). */
  diskBytes(): number {
    return this.#dir ? treeBytes(this.#dir) : 0;
  }

  async reopen(): Promise<StorageAdapter> {
    if (this.kind === 'fs') {
      await this.storage.close();
      this.storage = this.#create();
    }
    return this.storage;
  }

  /**
   * For fs: drops the adapter as a process crash would (nothing more is written) and opens a new
   * one over the directory, as a restarted process does. Memory has nothing to crash.
   */
  crash(): StorageAdapter {
    if (this.kind === 'fs') {
      abandonFsStorage(this.storage);
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

/**
 * A fresh `TestStorage` of `kind` for each test of the enclosing `describe`, disposed after it.
 * Read `storage` inside tests.
 */
export function storagePerTest(kind: StorageKind): { readonly storage: TestStorage } {
  let current: TestStorage | undefined;
  beforeEach(() => {
    current = new TestStorage(kind);
  });
  afterEach(async () => {
    await current?.dispose();
    current = undefined;
  });
  return {
    get storage(): TestStorage {
      if (current === undefined) throw new Error('no test is running');
      return current;
    },
  };
}

function treeBytes(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const name of readdirSync(path)) total += treeBytes(join(path, name));
  return total;
}
