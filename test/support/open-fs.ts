import { type FsStorageOptions, fsStorage } from '../../src/storage/fs/index.js';
import type { StorageAdapter } from '../../src/storage/types.js';

/**
 * An fs adapter opened as `Broker.open` opens it: the directory created, its lock taken, its
 * format checked. Rejects with what that open meets.
 */
export async function openFsStorage(options: FsStorageOptions): Promise<StorageAdapter> {
  const storage = fsStorage(options);
  await storage.open!();
  return storage;
}
