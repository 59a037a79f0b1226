/**
 * The deliveries of one channel: its delivery tags (1, 2, ... across every consumer and get of
 * the channel), the unacknowledged ones, and the subscriptions that may still hold some. Acks
 * with `multiple` settle the channel's deliveries up to a tag, whatever their consumer, as
 * RabbitMQ scopes them.
 */
import { MqliteError } from '../errors.js';
import type { Message } from '../message/message.js';
import { ACK, type Outcome, REQUEUE, type Subscription } from '../queues/consumer.js';
import { DeliveryWindow } from '../queues/delivery-window.js';
import { AmqpException } from './errors.js';
import type { MessageCounts } from './message-counts.js';

/** A message taken by `basic.get`: it settles through the message, having no consumer. */
class Got {
  constructor(
    readonly message: Message,
    readonly counts: MessageCounts | undefined,
  ) {}
}

/**
 * A consumer's delivery: its subscription and the tag the subscription gave it, not the message
 * (whose body the channel has no more use for once it is written: an unacked delivery costs the
 * channel these two fields, and a deleted queue's deliveries keep none of its messages alive).
 */
class Delivered {
  constructor(
    readonly subscription: Subscription,
    readonly tag: number,
    /** Its queue's counts, which count its ack. */
    readonly counts: MessageCounts | undefined,
  ) {}
}

/** An unacknowledged delivery: a consumer's, or a get. */
type Unacked = Delivered | Got;

export class Deliveries {
  #tag = 0;
  readonly #unacked = new DeliveryWindow<Unacked>();
  /** Every subscription that may still hold deliveries of the channel. */
  readonly #subscriptions = new Set<Subscription>();

  /** Unacknowledged deliveries. */
  get unacked(): number {
    return this.#unacked.size;
  }

  /** The next delivery tag. */
  nextTag(): number {
    return ++this.#tag;
  }

  /** A subscription started on the channel. */
  subscribed(subscription: Subscription): void {
    this.#subscriptions.add(subscription);
  }

  /**
   * Records a consumer's delivery that waits for its acknowledgement; `counts`, its queue's,
   * count its ack.
   */
  track(tag: number, message: Message, counts: MessageCounts | undefined): void {
    this.#unacked.add(tag, new Delivered(subscriptionOf(message), message.deliveryTag, counts));
  }

  /** Records a `basic.get` that waits for its acknowledgement (see `track`). */
  trackGet(tag: number, message: Message, counts: MessageCounts | undefined): void {
    this.#unacked.add(tag, new Got(message, counts));
  }

  /** A subscription was cancelled: forgotten unless deliveries of it wait for settling. */
  cancelled(subscription: Subscription): void {
    if (subscription.unackedCount === 0) this.#subscriptions.delete(subscription);
  }

  /**
   * Settles one delivery, or with `multiple` every one up to `tag` (0: all). Consecutive
   * deliveries of one consumer settle in one step, as one `multiple` of its own. An ack counts
   * in the `ack` of each delivery's queue. Returns how many it settled.
   * @throws AmqpException 406 for a tag that is not an unacknowledged delivery.
   */
  settle(tag: number, multiple: boolean, outcome: Outcome): number {
    if (!multiple) {
      const entry = this.#unacked.take(tag);
      if (entry === undefined) throw unknownTag(tag);
      if (outcome === ACK && entry.counts !== undefined) entry.counts.ack++;
      if (entry instanceof Delivered) this.#settleUpTo(entry, false, outcome);
      else settleGot(entry, outcome);
      return 1;
    }
    // Runs of one consumer's deliveries, each kept as its newest message.
    const runs: Unacked[] = [];
    let last: Subscription | undefined;
    const settled = this.#unacked.takeUpTo(tag === 0 ? Number.POSITIVE_INFINITY : tag, (entry) => {
      if (outcome === ACK && entry.counts !== undefined) entry.counts.ack++;
      const subscription = entry instanceof Delivered ? entry.subscription : undefined;
      if (subscription !== undefined && subscription === last) runs[runs.length - 1] = entry;
      else runs.push(entry);
      last = subscription;
    });
    if (settled === 0 && tag !== 0) throw unknownTag(tag);
    for (const entry of runs) {
      if (entry instanceof Delivered) this.#settleUpTo(entry, true, outcome);
      else settleGot(entry, outcome);
    }
    return settled;
  }

  /**
   * The channel is gone: its subscriptions close, returning their unacknowledged messages to
   * their queues, and so do the messages it got and did not acknowledge.
   */
  async release(): Promise<void> {
    const gets: Message[] = [];
    this.#unacked.takeUpTo(Number.POSITIVE_INFINITY, (entry) => {
      if (entry instanceof Got) gets.push(entry.message);
    });
    for (const subscription of this.#subscriptions) await subscription.close().catch(ignore);
    this.#subscriptions.clear();
    for (const message of gets) await message.nack(true).catch(ignore);
  }

  /** Settles a delivery, with `multiple` every earlier delivery of its consumer too. */
  #settleUpTo(delivered: Delivered, multiple: boolean, outcome: Outcome): void {
    const subscription = delivered.subscription;
    try {
      subscription.settle(delivered.tag, multiple, outcome);
    } catch (error) {
      // A delivery of a deleted queue settles as nothing: RabbitMQ acks it without complaint.
      // Anything else is the broker failing: the channel raises it.
      if (!(error instanceof MqliteError)) throw error;
    }
    if (!subscription.active) this.cancelled(subscription);
  }
}

/** The subscription a consumer's delivery came through. */
function subscriptionOf(message: Message): Subscription {
  return message.settlement as Subscription;
}

function settleGot(entry: Got, outcome: Outcome): void {
  const message = entry.message;
  (outcome === ACK ? message.ack() : message.nack(outcome === REQUEUE)).catch(ignore);
}

function unknownTag(tag: number): AmqpException {
  return new AmqpException(406, `unknown delivery tag ${tag}`);
}

function ignore(): void {}
