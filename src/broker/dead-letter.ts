/**
 * The router queues call to dead-letter a message: the broker routes the dead-lettered copy by its
 * exchange and routing key, like a publish. Today only the default exchange `""` exists, so the
 * routing key names the target queue; named exchanges plug in through `route`. A message that
 * reaches no queue is dropped silently, as brokers do, and so is one whose delivery would close
 * a dead-letter cycle no client took part in.
 */
import { QueueFullError } from '../errors.js';
import type { FieldTable, StoredMessage } from '../message/types.js';
import { type DeadLetterRouter, isDeadLetterCycle } from '../queues/classic/dead-letter.js';

/** A queue that accepts a message already normalized (the same copy goes to every target). */
export interface MessageTarget {
  publishMessage(message: StoredMessage): Promise<void>;
}

/** The names of the queues a message routed by `exchange` and `routingKey` reaches. */
export type RouteFunction = (
  exchange: string,
  routingKey: string,
  headers: Readonly<FieldTable> | undefined,
) => Iterable<string>;

/**
 * The default exchange alone: the routing key is the name of the target queue, if it exists;
 * any other exchange routes nowhere.
 */
export function defaultExchangeRoute(exists: (queue: string) => boolean): RouteFunction {
  return (exchange, routingKey) => (exchange === '' && exists(routingKey) ? [routingKey] : []);
}

/**
 * Makes the dead-letter router handed to queues.
 * @param route resolves target queue names (see `defaultExchangeRoute`).
 * @param lookup the queue of a name, or undefined once it is gone.
 */
export function createDeadLetterRouter(
  route: RouteFunction,
  lookup: (queue: string) => MessageTarget | undefined,
): DeadLetterRouter {
  return (message) => {
    let pending: Promise<void>[] | undefined;
    for (const name of route(message.exchange, message.routingKey, message.properties.headers)) {
      if (isDeadLetterCycle(message, name)) continue;
      const target = lookup(name);
      if (!target) continue;
      (pending ??= []).push(target.publishMessage(message).catch(dropWhenFull));
    }
    return pending && Promise.all(pending).then(ignore);
  };
}

/** A full target (`x-overflow: reject-publish`) drops the dead letter, as RabbitMQ does. */
function dropWhenFull(error: unknown): void {
  if (!(error instanceof QueueFullError)) throw error;
}

function ignore(): void {}
