import type { StorageAdapter } from '../storage/types.js';

const STORAGE_METHODS = ['namespace', 'listNamespaces', 'deleteNamespace', 'close'] as const;

/** Checks that `storage` is a {@link StorageAdapter}, before the broker takes it. */
export function checkStorage(storage: unknown): asserts storage is StorageAdapter {
  const adapter = storage as Partial<Record<string, unknown>> | null;
  const missing =
    typeof storage !== 'object' || storage === null
      ? undefined
      : STORAGE_METHODS.find((method) => typeof adapter![method] !== 'function');
  if (typeof storage !== 'object' || storage === null || missing !== undefined) {
    const what = typeof storage === 'object' && storage !== null ? 'an object' : typeof storage;
    throw new TypeError(
      `Broker option storage must be a storage adapter (fsStorage(), memoryStorage() or a StorageAdapter with ${STORAGE_METHODS.map((m) => `${m}()`).join(', ')}), got ${what}${missing ? ` without ${missing}()` : ''}`,
    );
  }
}
