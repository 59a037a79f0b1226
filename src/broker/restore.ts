/**
 * What opening a broker on stored data brings back: every stored durable queue is opened again,
 * transient ones (non-durable or exclusive) are deleted with the bindings that led to them, as at
 * a broker restart. A queue that cannot be opened is kept apart as damaged, and a queue directory
 * no declaration names is declared again from the copy of its declaration it holds, or kept apart
 * if it holds none.
 */

import { CorruptionError, DataLossError, resourceName } from '../errors.js';
import type { BrokerContext } from './broker-context.js';
import type { Declaration } from './declare-options.js';
import type { OpenQueues } from './open-queues.js';
import { BROKER_NAMESPACE, loadOwnDeclaration, type StoredQueue } from './registry.js';

/** Reopens the stored queues into `queues` (see the module's comment). */
export async function restoreQueues(queues: OpenQueues, context: BrokerContext): Promise<void> {
  const { storage, registry, damaged } = context;
  const stored = registry.load();
  const onDisk = storage.supports.persistent ? new Set(await storage.listNamespaces()) : undefined;
  onDisk?.delete(BROKER_NAMESPACE);
  // Messages that expired while the broker was closed are dead-lettered once all are open.
  await queues.whileRestoring(async () => {
    for (const queue of stored) {
      const present = !onDisk || onDisk.delete(queue.name);
      await restoreQueue(queues, context, queue, present);
    }
    for (const name of onDisk ?? []) await adoptOrphan(queues, context, name);
  });
  context.exchanges.removeQueues((queue) => !queues.has(queue) && !damaged.has(queue));
  await registry.sync();
}

async function restoreQueue(
  queues: OpenQueues,
  { storage, registry, damaged, vhost }: BrokerContext,
  stored: StoredQueue,
  present: boolean,
): Promise<void> {
  const { name, declaration, error } = stored;
  if (!declaration) return damaged.quarantine(name, undefined, error);
  // A declare or delete that never finished is undone or finished: the queue is gone.
  if (!declaration.durable || declaration.exclusive || stored.unfinished) {
    await storage.deleteNamespace(name);
    registry.remove(name);
    return;
  }
  if (!present) {
    return damaged.quarantine(
      name,
      declaration,
      new CorruptionError(
        `the data of ${resourceName('queue', name, vhost)} is missing: its directory does not exist`,
      ),
    );
  }
  try {
    await queues.open(declaration, undefined);
  } catch (cause) {
    damaged.quarantine(name, declaration, cause);
  }
}

/** A queue directory that no stored declaration names. */
async function adoptOrphan(
  queues: OpenQueues,
  context: BrokerContext,
  name: string,
): Promise<void> {
  const { storage, registry, damaged, vhost } = context;
  let declaration: Declaration | undefined;
  try {
    declaration = loadOwnDeclaration((await storage.namespace(name)).meta, name);
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
  await restoreQueue(queues, context, { name, declaration, unfinished: false }, true);
}
