/**
 * The storage the broker hands its queues: the broker's own, except that removing a queue's
 * namespace (however the queue goes: deleted, auto-deleted, expired) first marks its stored
 * declaration as being deleted, durably. A crash while the namespace is removed, or before the
 * declaration is forgotten, then leaves a queue the next open finishes deleting, never a
 * declared queue whose data is gone (which would be reported damaged).
 *
 * A queue's directory holds a copy of its declaration exactly while its declare is finished and
 * no delete has begun: written (durably) once its finished record is, and removed (durably)
 * before its record is marked as being deleted. That is the evidence the next open needs to
 * delete a queue whose record says unfinished: a record the broker's metadata lost (cut at a
 * record's boundary, skipped as damaged) can leave an older unfinished one, which alone must
 * never cost a queue its data.
 */
import { isNoSpace } from '../errors.js';
import type { StorageAdapter } from '../storage/types.js';
import type { Declaration } from './declare-options.js';
import { type BrokerRegistry, forgetOwnDeclaration, saveOwnDeclaration } from './registry.js';

/** `storage`, with deletes of namespaces marked in `registry` first (see the header). */
export function queueStorage(storage: StorageAdapter, registry: BrokerRegistry): StorageAdapter {
  return {
    get supports() {
      return storage.supports;
    },
    namespace: (name) => storage.namespace(name),
    listNamespaces: () => storage.listNamespaces(),
    async deleteNamespace(name) {
      await dropOwnDeclaration(storage, name);
      if (registry.markDeleting(name)) await markedDurably(registry);
      await storage.deleteNamespace(name);
    },
    close: () => storage.close(),
  };
}

/**
 * Makes the mark durable; on a full disk, goes on without: deleting is how space comes back, and
 * the record's removal, written once the directory's space is free, follows at once (a crash in
 * between leaves a queue reported missing, never one whose data is lost).
 */
async function markedDurably(registry: BrokerRegistry): Promise<void> {
  try {
    await registry.sync();
  } catch (error) {
    if (!isNoSpace(error)) throw error;
  }
}

/**
 * Writes the queue's copy of its own declaration: durably after a declare (see the header);
 * as any metadata when a stored queue opens, whose record is finished already.
 */
export async function keepOwnDeclaration(
  storage: StorageAdapter,
  declaration: Declaration,
  durably: boolean,
): Promise<void> {
  if (!storage.supports.persistent) return;
  const { meta } = await storage.namespace(declaration.name);
  // What the queue wrote there while opening is durable first: the copy never outlives it.
  if (durably) await meta.sync();
  if (saveOwnDeclaration(meta, declaration) && durably) await meta.sync();
}

/** Removes the queue's copy of its own declaration, durably, before its delete begins. */
async function dropOwnDeclaration(storage: StorageAdapter, name: string): Promise<void> {
  if (!storage.supports.persistent) return;
  let meta: Awaited<ReturnType<StorageAdapter['namespace']>>['meta'];
  try {
    ({ meta } = await storage.namespace(name));
  } catch {
    // A directory too damaged to open: its delete is finished on the next open, or undone.
    return;
  }
  try {
    if (forgetOwnDeclaration(meta)) await meta.sync();
  } catch {
    // Refused (a full disk): a crash before the delete ends then brings the queue back whole.
  }
}
