/**
 * The storage the broker hands its queues: the broker's own, except that removing a queue's
 * namespace (however the queue goes: deleted, auto-deleted, expired) first marks its stored
 * declaration as being deleted, durably. A crash while the namespace is removed, or before the
 * declaration is forgotten, then leaves a queue the next open finishes deleting, never a
 * declared queue whose data is gone (which would be reported damaged).
 */
import type { StorageAdapter } from '../storage/types.js';
import type { BrokerRegistry } from './registry.js';

/** `storage`, with deletes of namespaces marked in `registry` first (see the header). */
export function queueStorage(storage: StorageAdapter, registry: BrokerRegistry): StorageAdapter {
  return {
    get supports() {
      return storage.supports;
    },
    namespace: (name) => storage.namespace(name),
    listNamespaces: () => storage.listNamespaces(),
    async deleteNamespace(name) {
      if (registry.markDeleting(name)) await registry.sync();
      await storage.deleteNamespace(name);
    },
    close: () => storage.close(),
  };
}
