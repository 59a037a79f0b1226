/**
 * The priority queue and the plain FIFO queue: one `ClassicQueue` over a `LevelStore`, with as
 * many levels as `x-max-priority` asks for (one for the plain queue).
 */
import { invalidArg, queueResource } from '../errors.js';
import { messageCodec } from '../message/codec.js';
import type { ClassicArguments } from './arguments.js';
import {
  type ClassicQueueInit,
  type ClassicQueueOptions,
  checkClassicOptions,
  classicInit,
  openClassicNamespace,
} from './classic/classic-options.js';
import { ClassicQueue } from './classic/classic-queue.js';
import { LevelStore } from './classic/level-store.js';
import type { ReadyStore } from './classic/ready-store.js';

/** Options of `PriorityQueue.open()`. */
export interface PriorityQueueOptions extends ClassicQueueOptions {
  /**
   * Highest priority, 0..255 (sugar for the `x-max-priority` argument; giving both with different
   * values is a TypeError). Messages above it are delivered at it.
   */
  readonly maxPriority?: number;
}

/** How a queue kind orders the levels of its `LevelStore`, when not by priority alone. */
export interface LevelOrder {
  /** The level of a message priority. */
  readonly levelOf: (priority: number) => number;
  /** The store the queue runs on, over the level store. */
  readonly wrap: (levels: LevelStore) => ReadyStore;
}

/** Opens a `ClassicQueue` kind over a `LevelStore` of `maxLevel + 1` levels. */
export async function openLevelQueue<Q extends ClassicQueue>(
  options: ClassicQueueOptions,
  declared: ClassicArguments,
  maxLevel: number,
  make: (init: ClassicQueueInit) => Q,
  known?: readonly string[],
  order?: LevelOrder,
): Promise<Q> {
  const opened = await openClassicNamespace(options, declared, known);
  try {
    const levels = await LevelStore.open(opened.namespace, {
      maxLevel,
      codec: messageCodec,
      persistent: opened.storage.supports.persistent,
      ...(order && { levelOf: order.levelOf }),
    });
    const store = order === undefined ? levels : order.wrap(levels);
    return make(classicInit(options, opened, store));
  } catch (error) {
    if (opened.ownsStorage) await opened.storage.close();
    throw error;
  }
}

/**
 * A queue that delivers higher-priority messages first: the oldest message of the highest
 * non-empty level goes out next. A message's level is its `priority` property capped at
 * `x-max-priority` (no priority: 0). Each level is its own log (`prio.000` … `prio.255`), created
 * when first used. Every feature of a classic AMQP queue applies: acks and requeues to the
 * original position, prefetch, single active consumer, TTL, queue expiry, length limits,
 * dead-lettering, delivery limit.
 *
 * ```ts
 * const jobs = await PriorityQueue.open({ name: 'jobs', maxPriority: 9 });
 * await jobs.publish('routine', { priority: 1 });
 * await jobs.publish('urgent', { priority: 9 });
 * (await jobs.get())?.bodyString(); // 'urgent'
 * ```
 */
export class PriorityQueue extends ClassicQueue {
  /** Highest priority level (`x-max-priority`). */
  get maxPriority(): number {
    return this.arguments.maxPriority ?? 0;
  }

  /**
   * Opens (or creates) a priority queue. `x-max-priority` (or `maxPriority`) is required. A queue
   * that exists in the storage keeps its messages and arguments; other arguments fail with 406.
   *
   * @throws PreconditionFailedError (406) for an invalid or inequivalent argument.
   */
  static async open(options: PriorityQueueOptions): Promise<PriorityQueue> {
    const args = checkClassicOptions(options, 'PriorityQueue', ['maxPriority']);
    let maxPriority = args.maxPriority;
    if (options.maxPriority !== undefined) {
      const sugar = checkClassicOptions(
        {
          name: options.name,
          ...(options.vhost !== undefined && { vhost: options.vhost }),
          arguments: { 'x-max-priority': options.maxPriority },
        },
        'PriorityQueue',
      ).maxPriority;
      if (maxPriority !== undefined && maxPriority !== sugar) {
        throw new TypeError(
          `maxPriority ${options.maxPriority} differs from x-max-priority ${maxPriority}`,
        );
      }
      maxPriority = sugar;
    }
    if (maxPriority === undefined) {
      throw invalidArg('x-max-priority', queueResource(options), 'is required: an integer 0..255');
    }
    return openLevelQueue(
      options,
      { ...args, maxPriority },
      maxPriority,
      (init) => new PriorityQueue(init),
    );
  }
}

/**
 * A plain FIFO queue with every feature of a classic AMQP queue: a priority queue of one level,
 * sharing all of its machinery.
 *
 * ```ts
 * const tasks = await Queue.open({ name: 'tasks', arguments: { 'x-message-ttl': 60_000 } });
 * ```
 */
export class Queue extends ClassicQueue {
  /**
   * Opens (or creates) a FIFO queue. A queue that exists in the storage keeps its messages and
   * arguments; other arguments fail with 406. `x-max-priority` makes it a `PriorityQueue`
   * instead, so it is refused here.
   */
  static async open(options: ClassicQueueOptions): Promise<Queue> {
    const args = checkClassicOptions(options, 'Queue');
    if (args.maxPriority !== undefined) {
      throw invalidArg(
        'x-max-priority',
        queueResource(options),
        'a priority queue is opened with PriorityQueue.open()',
      );
    }
    return openLevelQueue(options, args, 0, (init) => new Queue(init));
  }
}
