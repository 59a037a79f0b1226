/**
 * What opening a broker on stored data brings back: every stored durable queue is opened again,
 * transient ones (non-durable or exclusive) are deleted with the bindings that led to them, as at
 * a broker restart. A queue that cannot be opened is kept apart as damaged, and a queue directory
 * no declaration names is declared again from the copy of its declaration it holds, or kept apart
 * if it holds none.
 *
 * Damage never causes a deletion. The broker's metadata read around damage, cut at a record's
 * boundary or restored from an older file can hold a record older than the one lost, such as an
 * unfinished declare whose finish was lost. So a queue directory is deleted only on the evidence
 * of the directory itself: the copy of the declaration it holds from its declare's end to its
 * delete's start (see queue-storage.ts) wins over the broker's record, and a directory without
 * one is deleted only when its own metadata or the broker's was read whole; otherwise it is kept
 * apart.
 */

import { CorruptionError, DataLossError, resourceName, StorageError } from '../errors.js';
import type { BrokerContext } from './broker-context.js';
import type { Declaration } from './declare-options.js';
import { keepOwnDeclaration } from './queue-storage.js';
import {
  BROKER_NAMESPACE,
  loadOwnDeclaration,
  type StoredQueue,
  sameDeclaration,
} from './registry.js';

/** Reopens the stored queues into `queues` (see the module's comment). */
export async function restoreQueues(queues: QueueOpener, context: BrokerContext): Promise<void> {
  const { storage, registry, damaged } = context;
  const stored = registry.load();
  const onDisk = storage.supports.persistent ? new Set(await storage.listNamespaces()) : undefined;
  onDisk?.delete(BROKER_NAMESPACE);
  // Messages that expired while the broker was closed are dead-lettered once all are open.
  await queues.whileRestoring(async () => {
    for (const queue of stored) {
      if (!onDisk || onDisk.delete(queue.name)) await restorePresent(queues, context, queue);
      else restoreAbsent(context, queue);
    }
    for (const name of onDisk ?? []) await adoptOrphan(queues, context, name);
  });
  context.exchanges.removeQueues((queue) => !queues.has(queue) && !damaged.has(queue));
  try {
    await registry.sync();
  } catch (error) {
    // A full disk: the broker opens on what it read, and the next write that succeeds stores
    // what restoring changed (a reopen before then restores the same again).
    if (!(error instanceof StorageError)) throw error;
    damaged.report(error);
  }
}

/** What restoring needs of the open queues. */
interface QueueOpener {
  open(declaration: Declaration, owner: undefined): Promise<unknown>;
  has(name: string): boolean;
  whileRestoring(restore: () => Promise<void>): Promise<void>;
}

/** A stored queue without a directory: forgotten if it was going, else reported missing. */
function restoreAbsent({ registry, damaged, vhost }: BrokerContext, stored: StoredQueue): void {
  const { name, declaration, error } = stored;
  if (!declaration) {
    damaged.quarantine(name, undefined, error);
  } else if (!declaration.durable || declaration.exclusive || stored.unfinished) {
    registry.remove(name);
  } else {
    const queue = resourceName('queue', name, vhost);
    const missing = `the data of ${queue} is missing: its directory does not exist`;
    damaged.quarantine(name, declaration, new CorruptionError(missing));
  }
}

/** A stored queue whose directory is there (see the module's comment). */
async function restorePresent(
  queues: QueueOpener,
  context: BrokerContext,
  stored: StoredQueue,
): Promise<void> {
  const { registry, damaged, vhost } = context;
  const { name, declaration } = stored;
  let own: OwnCopy;
  try {
    own = await ownCopy(context, name);
  } catch (cause) {
    return damaged.quarantine(name, declaration, cause);
  }
  if (own.declaration) {
    if (!declaration || stored.unfinished || !sameDeclaration(declaration, own.declaration)) {
      const damage = registry.damage();
      damaged.report(
        new DataLossError(
          'restored',
          `the record of ${resourceName('queue', name, vhost)} in the broker's metadata is older than its directory (${damage ? `the metadata was damaged: ${damage.message}` : 'the metadata lost its later records'}); declared again from the copy in its directory`,
          { file: damage?.file, position: damage?.position, end: damage?.end },
        ),
        name,
      );
      registry.save(own.declaration);
    }
    return openOrDrop(queues, context, own.declaration);
  }
  if (declaration?.durable && !declaration.exclusive && !stored.unfinished) {
    return openOrDrop(queues, context, declaration);
  }
  // A declare that never finished, a delete that began, or a transient queue: its directory
  // holds no copy of its declaration, so it goes, if the record or that absence can be trusted
  // (a declare that failed half-way may leave its directory's metadata incomplete).
  if (declaration && (!own.damaged || !registry.damage())) return drop(context, name);
  damaged.quarantine(
    name,
    declaration,
    stored.error ??
      new CorruptionError(
        `${resourceName('queue', name, vhost)} is kept apart: its record in the broker's metadata is not that of a finished durable queue, and its directory's metadata, damaged, holds no declaration of its own to tell whether it was; delete the queue once its data is checked`,
      ),
  );
}

/** Opens a durable queue, or deletes a transient one as a restart does. */
async function openOrDrop(
  queues: QueueOpener,
  context: BrokerContext,
  declaration: Declaration,
): Promise<void> {
  if (!declaration.durable || declaration.exclusive) return drop(context, declaration.name);
  try {
    await queues.open(declaration, undefined);
    await keepOwnDeclaration(context.storage, declaration, false);
  } catch (cause) {
    context.damaged.quarantine(declaration.name, declaration, cause);
  }
}

async function drop({ storage, registry }: BrokerContext, name: string): Promise<void> {
  await storage.deleteNamespace(name);
  registry.remove(name);
}

interface OwnCopy {
  /** The declaration the directory holds of itself, if any. */
  readonly declaration: Declaration | undefined;
  /** Whether the directory's metadata was read around damage (or lost): a copy may be missing. */
  readonly damaged: boolean;
}

/** @throws CorruptionError when the copy is malformed. */
async function ownCopy({ storage }: BrokerContext, name: string): Promise<OwnCopy> {
  if (!storage.supports.persistent) return { declaration: undefined, damaged: false };
  const { meta } = await storage.namespace(name);
  return {
    declaration: loadOwnDeclaration(meta, name),
    damaged: (meta.damage?.length ?? 0) > 0,
  };
}

/** A queue directory that no stored declaration names. */
async function adoptOrphan(
  queues: QueueOpener,
  context: BrokerContext,
  name: string,
): Promise<void> {
  const { registry, damaged, vhost } = context;
  let declaration: Declaration | undefined;
  try {
    declaration = (await ownCopy(context, name)).declaration;
  } catch (cause) {
    return damaged.quarantine(name, undefined, cause);
  }
  if (!declaration) {
    return damaged.quarantine(
      name,
      undefined,
      new CorruptionError(
        `queue directory '${name}' is named by no declaration in the broker's metadata and holds none of its own`,
      ),
    );
  }
  damaged.report(
    new DataLossError(
      'restored',
      `${resourceName('queue', name, vhost)} was missing from the broker's metadata; declared again from the copy in its directory`,
    ),
    name,
  );
  registry.save(declaration);
  await openOrDrop(queues, context, declaration);
}
