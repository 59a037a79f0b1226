/**
 * How the broker validates and opens each queue kind. Every kind is constructible on its own;
 * this table is the one place that knows their factories, so the Broker stays kind-agnostic.
 */
import type { Clock } from '../clock.js';
import { parseClassicArguments } from '../queues/arguments.js';
import type { ClassicQueueOptions } from '../queues/classic/classic-queue.js';
import type { DeadLetterRouter } from '../queues/classic/dead-letter.js';
import { parseLvqDeclaration } from '../queues/lvq/arguments.js';
import { LastValueQueue } from '../queues/lvq/last-value-queue.js';
import { PriorityQueue, Queue } from '../queues/priority-queue.js';
import { parseStreamArguments } from '../queues/stream/arguments.js';
import { StreamQueue } from '../queues/stream/stream-queue.js';
import type { StorageAdapter } from '../storage/types.js';
import type { Declaration, QueueDeclareOptions, QueueKind } from './declare-options.js';
import type { BrokerQueue } from './queue-handle.js';

/** The handles `broker.queue()` returns, one class per kind. */
export type AnyQueue = Queue | PriorityQueue | LastValueQueue | StreamQueue;

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

/** Statistics of one queue, as `broker.queues()` lists them. */
export interface QueueStats {
  /** Messages held: ready plus unacknowledged (a stream: retained). */
  readonly messages: number;
  /** Messages ready for delivery (a stream: retained). */
  readonly messagesReady: number;
  /** Messages delivered and not yet acknowledged (a stream: 0, it removes nothing on ack). */
  readonly messagesUnacknowledged: number;
  /** Body bytes of the messages held (a stream: stored bytes). */
  readonly bytes: number;
  readonly consumers: number;
}

/** What a kind is opened with besides its declaration. */
export interface KindContext {
  readonly storage: StorageAdapter;
  /** The queue's storage namespace. */
  readonly namespace: string;
  readonly clock: Clock;
  /** Where the queue sends dead-lettered messages. */
  readonly deadLetter: DeadLetterRouter;
  /** The queue was deleted, by the broker, by its own `delete()` or by `x-expires`. */
  readonly onDelete: () => void;
  /** Errors nobody awaits (a dead-letter route that failed). */
  readonly onError: (error: unknown) => void;
}

interface Kind {
  /** Validates the declaration's arguments for this kind, touching nothing (406 on error). */
  validate(declaration: Declaration): void;
  open(declaration: Declaration, context: KindContext): Promise<AnyQueue>;
}

function classicOptions(d: Declaration, c: KindContext): ClassicQueueOptions {
  return {
    name: d.name,
    arguments: d.arguments,
    storage: c.storage,
    namespace: c.namespace,
    clock: c.clock,
    deadLetter: c.deadLetter,
    onDelete: c.onDelete,
    onError: c.onError,
  };
}

/** The factory of every queue kind. */
export const KINDS: Readonly<Record<QueueKind, Kind>> = {
  classic: {
    validate: (d) => {
      parseClassicArguments(d.arguments, d.name);
    },
    open: (d, c) => Queue.open(classicOptions(d, c)),
  },
  priority: {
    validate: (d) => {
      parseClassicArguments(d.arguments, d.name);
    },
    open: (d, c) => PriorityQueue.open(classicOptions(d, c)),
  },
  lvq: {
    validate: (d) => {
      parseLvqDeclaration(d.arguments, d.name);
    },
    open: (d, c) => LastValueQueue.open(classicOptions(d, c)),
  },
  stream: {
    validate: (d) => {
      parseStreamArguments(d);
    },
    open: (d, c) =>
      StreamQueue.open({
        name: d.name,
        durable: d.durable,
        exclusive: d.exclusive,
        autoDelete: d.autoDelete,
        arguments: d.arguments,
        storage: c.storage,
        namespace: c.namespace,
        clock: c.clock,
        onDelete: c.onDelete,
      }),
  },
};

/** The statistics of a queue of any kind. */
export function queueStats(queue: AnyQueue): QueueStats {
  if (queue instanceof StreamQueue) {
    const messages = queue.messageCount;
    return {
      messages,
      messagesReady: messages,
      messagesUnacknowledged: 0,
      bytes: queue.messageBytes,
      consumers: queue.consumerCount,
    };
  }
  const s = queue.stats();
  return {
    messages: s.messages,
    messagesReady: s.messagesReady,
    messagesUnacknowledged: s.messagesUnacknowledged,
    bytes: s.messageBytes,
    consumers: s.consumers,
  };
}
