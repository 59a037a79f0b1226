/**
 * The quorum queue: a durable FIFO `ClassicQueue` with the rules of RabbitMQ's quorum queues on
 * one node (see `arguments.ts`). Replication has no meaning in one process: its arguments are
 * accepted without effect.
 */
import { queueResource, ResourceLockedError } from '../../errors.js';
import type { Message } from '../../message/message.js';
import type { ClassicQueueInit, ClassicQueueOptions } from '../classic/classic-options.js';
import { checkClassicOptionKeys } from '../classic/classic-options.js';
import { ClassicQueue } from '../classic/classic-queue.js';
import { openLevelQueue } from '../priority-queue.js';
import { parseQuorumArguments, QUORUM_ARGUMENTS } from './arguments.js';
import { QuorumStore, quorumLevel } from './quorum-store.js';

/**
 * A queue with RabbitMQ's quorum-queue semantics: poison-message handling (a delivery limit of 20
 * unless `x-delivery-limit` says otherwise; `-1` for none), `x-delivery-count` on redeliveries,
 * length limits with `drop-head` or `reject-publish`, TTL, dead-lettering (`at-least-once` too)
 * and single active consumer, as a classic queue has them. Its delivery order is RabbitMQ 4's:
 * returned messages first, in the order they came back (to the back of the queue instead when
 * there is no delivery limit), then high-priority messages (`priority` above 4) and normal ones
 * 2:1.
 *
 * ```ts
 * const jobs = await QuorumQueue.open({ name: 'jobs', arguments: { 'x-delivery-limit': 3 } });
 * ```
 */
export class QuorumQueue extends ClassicQueue {
  /** The queue type, as `x-queue-type` names it. */
  readonly type = 'quorum';
  /** The queue as its errors name it. */
  readonly #resource: string;

  /** @internal Built by `open()`. */
  protected constructor(init: ClassicQueueInit) {
    super(init);
    this.#resource = queueResource(init);
  }

  /**
   * Opens (or creates) a quorum queue. A queue that exists in the storage keeps its messages and
   * arguments; other arguments fail with 406.
   * @throws PreconditionFailedError (406) for an argument RabbitMQ refuses on a quorum queue
   *   (`x-max-priority`, `x-queue-mode`, an invalid `x-dead-letter-strategy`, …).
   */
  static async open(options: ClassicQueueOptions): Promise<QuorumQueue> {
    checkClassicOptionKeys(options, 'QuorumQueue', []);
    const args = parseQuorumArguments(options.arguments, queueResource(options));
    return openLevelQueue(
      options,
      args,
      1,
      (init) =>
        new QuorumQueue({
          ...init,
          deliveryCountHeader: 'redeliveries',
          lengthLimits: 'quorum',
        }),
      QUORUM_ARGUMENTS,
      { levelOf: quorumLevel, wrap: (levels) => new QuorumStore(levels) },
    );
  }

  /**
   * Takes one ready message, as a classic queue's `get` does.
   * @throws ResourceLockedError (405) on a single-active-consumer queue, as RabbitMQ refuses it.
   */
  override get(options: { noAck?: boolean } = {}): Promise<Message | null> {
    if (this.arguments.singleActiveConsumer && !this.closed) {
      return Promise.reject(
        new ResourceLockedError(
          `cannot obtain access to locked ${this.#resource}. basic.get operations are not supported by quorum queues with single active consumer`,
        ),
      );
    }
    return super.get(options);
  }
}
