/**
 * The deliveries of one channel: its delivery tags (1, 2, ... across every consumer and get of
 * the channel), the unacknowledged ones, and the subscriptions that may still hold some. Acks
 * with `multiple` settle the channel's deliveries up to a tag, whatever their consumer, as
 * RabbitMQ scopes them.
 */
import type { Message } from '../message/message.js';
import type { Subscription } from '../queues/consumer.js';
import { AmqpException } from './errors.js';

interface Unacked {
  readonly message: Message;
  /** The consumer it came through; none for a `basic.get`. */
  readonly subscription: Subscription | undefined;
}

/** How a delivery is settled: ack, nack or reject of the message. */
export type Settle = (message: Message) => Promise<void>;

export class Deliveries {
  #tag = 0;
  readonly #unacked = new Map<number, Unacked>();
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

  /** Records a delivery that waits for its acknowledgement. */
  track(tag: number, message: Message, subscription: Subscription | undefined): void {
    this.#unacked.set(tag, { message, subscription });
  }

  /** A subscription was cancelled: forgotten unless deliveries of it wait for settling. */
  cancelled(subscription: Subscription): void {
    if (subscription.unackedCount === 0) this.#subscriptions.delete(subscription);
  }

  /**
   * Settles one delivery, or with `multiple` every one up to `tag` (0: all).
   * @throws AmqpException 406 for a tag that is not an unacknowledged delivery.
   */
  settle(tag: number, multiple: boolean, how: Settle): void {
    const unacked = this.#unacked;
    if (!multiple) {
      const entry = unacked.get(tag);
      if (!entry) throw unknownTag(tag);
      unacked.delete(tag);
      this.#settled(entry, how);
      return;
    }
    let settled = 0;
    for (const [t, entry] of unacked) {
      if (tag !== 0 && t > tag) break;
      unacked.delete(t);
      this.#settled(entry, how);
      settled++;
    }
    if (settled === 0 && tag !== 0) throw unknownTag(tag);
  }

  /**
   * The channel is gone: its subscriptions close, returning their unacknowledged messages to
   * their queues, and so do the messages it got and did not acknowledge.
   */
  async release(): Promise<void> {
    const gets: Message[] = [];
    for (const { message, subscription } of this.#unacked.values()) {
      if (!subscription) gets.push(message);
    }
    this.#unacked.clear();
    for (const subscription of this.#subscriptions) await subscription.close().catch(ignore);
    this.#subscriptions.clear();
    for (const message of gets) await message.nack(true).catch(ignore);
  }

  #settled(entry: Unacked, how: Settle): void {
    // A delivery of a deleted queue settles as nothing: RabbitMQ acks it without complaint.
    how(entry.message).catch(ignore);
    const subscription = entry.subscription;
    if (subscription && !subscription.active) this.cancelled(subscription);
  }
}

function unknownTag(tag: number): AmqpException {
  return new AmqpException(406, `unknown delivery tag ${tag}`);
}

function ignore(): void {}
