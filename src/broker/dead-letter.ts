/**
 * The router queues call to dead-letter a message: the broker routes the dead-lettered copy by its
 * exchange (`x-dead-letter-exchange`) and routing key through its exchanges, like a publish. A
 * message that reaches no queue (a missing exchange included, or one refusing to route it) is
 * dropped silently, as brokers
 * do, and so is one whose delivery into a queue would close a dead-letter cycle no client took
 * part in.
 */
import { MqliteError, QueueFullError } from '../errors.js';
import type { MessageProperties, StoredMessage } from '../message/types.js';
import {
  type DeadLetterConfirms,
  type DeadLetterRouter,
  isDeadLetterCycle,
  UnconfirmedDeadLetter,
} from '../queues/classic/dead-letter.js';

/** A queue that accepts a message already normalized (the same copy goes to every target). */
export interface MessageTarget {
  publishMessage(message: StoredMessage): Promise<void>;
}

/** The names of the queues a message routed by `exchange` and `routingKey` reaches. */
export type RouteFunction = (
  exchange: string,
  routingKey: string,
  properties: Readonly<MessageProperties>,
) => Iterable<string>;

/**
 * Makes the dead-letter router handed to queues.
 * @param route resolves the names of the target queues (the broker's exchanges).
 * @param lookup the queue of a name, or undefined once it is gone.
 * @param held while the broker opens its stored queues, a promise of the end of that: dead
 *   letters (of messages that expired while it was closed) wait for it, so that they reach
 *   target queues opened after their own, rather than being dropped as sent nowhere.
 */
export function createDeadLetterRouter(
  route: RouteFunction,
  lookup: (queue: string) => MessageTarget | undefined,
  held: () => Promise<void> | undefined = () => undefined,
): DeadLetterRouter {
  const deliver = (
    message: StoredMessage,
    confirms: DeadLetterConfirms | undefined,
  ): Promise<void> | undefined => {
    let pending: Promise<void>[] | undefined;
    let names: Iterable<string>;
    try {
      names = route(message.exchange, message.routingKey, message.properties);
    } catch (error) {
      // An exchange that refuses the message (a consistent-hash header that is no string) routes
      // it nowhere: dropped, as a dead letter that reaches no queue.
      if (error instanceof MqliteError) return unconfirmed(confirms, 'routes nowhere');
      throw error;
    }
    let routed = false;
    for (const name of names) {
      routed = true;
      if (isDeadLetterCycle(message, name)) continue;
      if (confirms?.confirmed.has(name)) continue;
      const target = lookup(name);
      if (!target) continue;
      const stored = target.publishMessage(message);
      (pending ??= []).push(
        confirms === undefined
          ? stored.catch(dropWhenFull)
          : stored.then(() => {
              confirms.confirmed.add(name);
            }),
      );
    }
    if (!routed) return unconfirmed(confirms, 'routes to no queue');
    return pending && Promise.all(pending).then(ignore);
  };
  return (message, confirms) => {
    const opening = held();
    return opening === undefined
      ? deliver(message, confirms)
      : opening.then(() => deliver(message, confirms));
  };
}

/** Nothing more to do for an at-most-once dead letter; an at-least-once one is tried again. */
function unconfirmed(confirms: DeadLetterConfirms | undefined, why: string) {
  return confirms && Promise.reject(new UnconfirmedDeadLetter(`dead letter ${why}`));
}

/** A full target (`x-overflow: reject-publish`) drops the dead letter, as RabbitMQ does. */
function dropWhenFull(error: unknown): void {
  if (!(error instanceof QueueFullError)) throw error;
}

function ignore(): void {}
