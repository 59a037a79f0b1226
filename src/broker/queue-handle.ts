/**
 * What the broker adds to the queues it hands out: bindings to exchanges, and a delete that
 * honours `ifUnused`/`ifEmpty`. Queue classes know nothing of the broker, so the broker attaches
 * these calls to each queue it opens; the publish and consume paths stay the queue's own.
 *
 * The generic signatures of `get`, `consumeOne` and `subscribe` change no behaviour: they let
 * code typed against another client's message class (such as `AMQPMessage` of
 * `@cloudamqp/amqp-client`, whose public shape mqlite's `Message` shares) receive mqlite's
 * deliveries. Calls that name no type get mqlite's `Message`.
 */

import type { Message } from '../message/message.js';
import type { FieldTable, MessageProperties, PublishBody } from '../message/types.js';
import type { SubscribeParams, Subscription } from '../queues/consumer.js';
import type { LastValueQueue } from '../queues/lvq/last-value-queue.js';
import type { PriorityQueue, Queue } from '../queues/priority-queue.js';
import type { QuorumQueue } from '../queues/quorum/quorum-queue.js';
import type { StreamQueue } from '../queues/stream/stream-queue.js';
import type { QueueDeclareOptions } from './declare-options.js';
import type { AnyQueue } from './queue-kinds.js';

/** Options of `broker.deleteQueue()` and `queue.delete()`. */
export interface DeleteQueueOptions {
  /** Refuse (406) while the queue has consumers. */
  ifUnused?: boolean;
  /** Refuse (406) while the queue holds messages. */
  ifEmpty?: boolean;
}

/** An exchange given by name, or an exchange handle. */
export type ExchangeRef = string | { readonly name: string };

/** The calls the broker adds to a queue handle. */
export interface QueueBindings {
  /**
   * Binds the queue to an exchange, as `queue.bind` of `@cloudamqp/amqp-client`: messages
   * published there whose routing key (or headers) match reach this queue. Binding twice with the
   * same key and arguments is one binding. Resolves with the queue, for chaining.
   * @throws AccessRefusedError (403) for the default exchange `""`; NotFoundError (404) for a
   *   missing exchange or a deleted queue; PreconditionFailedError (406) for an invalid headers
   *   `x-match`.
   */
  bind(exchange: ExchangeRef, routingKey?: string, args?: Record<string, unknown>): Promise<this>;
  /** Removes the binding with exactly this key and arguments; a missing one is no error. */
  unbind(exchange: ExchangeRef, routingKey?: string, args?: Record<string, unknown>): Promise<this>;
  /**
   * Deletes the queue with its messages and bindings; resolves with how many messages it held.
   * @throws PreconditionFailedError (406) when `ifUnused` and it has consumers, or `ifEmpty` and
   *   it holds messages.
   */
  delete(options?: DeleteQueueOptions): Promise<number>;
  /** Polls one message (see the queue's own `get`), typed as the message class `M`. */
  get<M = Message>(options?: { noAck?: boolean }): Promise<M | null>;
  /** Waits for one message (see the queue's own `consumeOne`), typed as the message class `M`. */
  consumeOne<M = Message>(options?: { timeout?: number; signal?: AbortSignal }): Promise<M>;
  /** Subscribes (see the queue's own `subscribe`), the callback typed with the message class `M`. */
  subscribe<M = Message>(
    params: SubscribeParams & { args?: Record<string, unknown> },
    callback: (message: M) => void | Promise<void>,
  ): Promise<Subscription>;
}

/** A queue as the broker returns it: the queue of its kind, plus `QueueBindings`. */
export type BrokerQueue<Q extends AnyQueue = AnyQueue> = Q & QueueBindings;

type ArgumentsOf<O> = O extends { readonly arguments: infer A } ? A : Record<never, never>;

/**
 * The queue class a declaration makes, worked out from the options' type as the broker works it
 * out from their values (an LVQ wins over priority), so that
 * `broker.queue('p', { arguments: { 'x-max-priority': 9 } })` is typed as a `PriorityQueue`.
 * Options whose type does not tell (a variable of type `QueueDeclareOptions`, an arguments table
 * typed `Record<string, unknown>`, a passive lookup) give the union of every kind.
 */
export type DeclaredQueue<O> = O extends { readonly passive: true }
  ? AnyQueue
  : string extends keyof ArgumentsOf<O>
    ? AnyQueue
    : O extends { readonly lvq: true } | { readonly lvqKey: string }
      ? LastValueQueue
      : ArgumentsOf<O> extends
            | { readonly 'qpid.last_value_queue': true }
            | { readonly 'qpid.last_value_queue_key': string }
        ? LastValueQueue
        : O extends { readonly type: 'stream' }
          ? StreamQueue
          : ArgumentsOf<O> extends { readonly 'x-queue-type': 'stream' }
            ? StreamQueue
            : O extends { readonly type: 'quorum' }
              ? QuorumQueue
              : ArgumentsOf<O> extends { readonly 'x-queue-type': 'quorum' }
                ? QuorumQueue
                : O extends { readonly maxPriority: number }
                  ? PriorityQueue
                  : ArgumentsOf<O> extends { readonly 'x-max-priority': number }
                    ? PriorityQueue
                    : [keyof QueueDeclareOptions] extends [keyof O]
                      ? AnyQueue
                      : Queue;

/**
 * Types a declared queue by its options. Sound because the broker picks the kind at run time by
 * the same rules `DeclaredQueue` spells in types.
 */
export function asDeclared<O>(queue: BrokerQueue): BrokerQueue<DeclaredQueue<O>> {
  return queue as unknown as BrokerQueue<DeclaredQueue<O>>;
}

/** What a queue handle's added calls ask of the broker. */
export interface QueueBinder {
  bind(queue: string, exchange: string, routingKey: string, args: FieldTable): Promise<void>;
  unbind(queue: string, exchange: string, routingKey: string, args: FieldTable): Promise<void>;
  delete(queue: string, options: DeleteQueueOptions): Promise<number>;
}

/**
 * Adds `bind`, `unbind` and the broker's `delete` to a queue the broker opened. The queue's own
 * `delete()` is replaced: take `queue.delete.bind(queue)` before, for the broker to call once its
 * checks passed.
 */
export function attachBindings<Q extends AnyQueue>(queue: Q, binder: QueueBinder): BrokerQueue<Q> {
  const handle = queue as BrokerQueue<Q>;
  const name = queue.name;
  // Not enumerable, like methods; writable and configurable, so a session's proxy may wrap them.
  const method = (value: unknown) => ({ value, writable: true, configurable: true });
  Object.defineProperties(queue, {
    bind: method(async (exchange: ExchangeRef, routingKey = '', args: FieldTable = {}) => {
      await binder.bind(name, exchangeName(exchange), routingKey, args);
      return handle;
    }),
    unbind: method(async (exchange: ExchangeRef, routingKey = '', args: FieldTable = {}) => {
      await binder.unbind(name, exchangeName(exchange), routingKey, args);
      return handle;
    }),
    delete: method((options: DeleteQueueOptions = {}) => binder.delete(name, options)),
  });
  return handle;
}

/** The name of an exchange given by name or by handle. */
export function exchangeName(exchange: ExchangeRef): string {
  if (typeof exchange === 'string') return exchange;
  if (typeof exchange === 'object' && exchange !== null && typeof exchange.name === 'string') {
    return exchange.name;
  }
  throw new TypeError('exchange must be a name or an exchange handle');
}

/** What the handle of a deleted queue reaches instead: the broker, by the queue's name. */
export interface DeletedQueueRoutes {
  /** Publishes through the default exchange (unroutable unless a queue of that name exists). */
  publish(
    queue: string,
    body: PublishBody,
    properties: MessageProperties | undefined,
  ): Promise<void>;
  /** The queue now of that name. @throws NotFoundError (404) when there is none. */
  current(queue: string): BrokerQueue;
}

/**
 * Turns the handle of a deleted queue into what an AMQP client's handle is, a name: a publish goes
 * through the default exchange (dropped when unroutable, 312 with `mandatory`), and `get`,
 * `consumeOne`, `subscribe` and `purge` reach the queue of that name, 404 when there is none.
 */
export function redirectDeleted(queue: AnyQueue, routes: DeletedQueueRoutes): void {
  const name = queue.name;
  const method = (value: unknown) => ({ value, writable: true, configurable: true });
  const now = () => routes.current(name) as unknown as Record<string, (...a: unknown[]) => unknown>;
  const forward = (call: string) => method(async (...args: unknown[]) => now()[call]!(...args));
  Object.defineProperties(queue, {
    publish: method((body: PublishBody, properties?: MessageProperties) =>
      routes.publish(name, body, properties),
    ),
    get: forward('get'),
    consumeOne: forward('consumeOne'),
    subscribe: forward('subscribe'),
    purge: forward('purge'),
  });
}
