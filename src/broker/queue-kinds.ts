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
import type { Declaration, QueueKind } from './declare-options.js';

/** The handles `broker.queue()` returns, one class per kind. */
export type AnyQueue = Queue | PriorityQueue | LastValueQueue | StreamQueue;

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
        onError: c.onError,
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
