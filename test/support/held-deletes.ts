/**
 * A storage adapter whose namespace deletions wait until released: a queue's delete then stays
 * under way, for tests of what methods naming the queue meanwhile see.
 */
import type { StorageAdapter } from '../../src/storage/types.js';

export interface HeldDeletes {
  readonly storage: StorageAdapter;
  /** Resolves once a deletion waits. */
  readonly waiting: () => Promise<void>;
  /** Lets the waiting deletions (and every later one) go on. */
  readonly release: () => void;
}

export function holdDeletes(storage: StorageAdapter): HeldDeletes {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reached!: () => void;
  const waiting = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const held: StorageAdapter = {
    get supports() {
      return storage.supports;
    },
    ...(storage.onDataLoss && { onDataLoss: (listener) => storage.onDataLoss!(listener) }),
    namespace: (name) => storage.namespace(name),
    listNamespaces: () => storage.listNamespaces(),
    async deleteNamespace(name) {
      reached();
      await released;
      await storage.deleteNamespace(name);
    },
    close: () => storage.close(),
  };
  return { storage: held, waiting: () => waiting, release };
}
