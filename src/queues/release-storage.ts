import type { Namespace, StorageAdapter } from '../storage/types.js';

/**
 * Lets go of a queue's storage, the last step of `close()` and `delete()` of every queue kind:
 * closes its namespace (its data stays) or deletes it, then closes the adapter if the queue
 * created the adapter itself (opened without one).
 */
export async function releaseQueueStorage(
  storage: StorageAdapter,
  namespace: Namespace,
  ownsStorage: boolean,
  how: 'close' | 'delete',
): Promise<void> {
  if (how === 'delete') await storage.deleteNamespace(namespace.name);
  else await namespace.close();
  if (ownsStorage) await storage.close();
}
