/**
 * Direct reply-to, as RabbitMQ offers it: a channel consuming from the pseudo-queue
 * `amq.rabbitmq.reply-to` (no-ack) gets an address of its own; a request published on it with
 * `reply-to: amq.rabbitmq.reply-to` carries that address instead, and a reply published to the
 * default exchange with the address as routing key goes straight to the channel, through no queue.
 */
import { randomBytes } from 'node:crypto';
import type { MessageProperties } from '../message/types.js';

/** The pseudo-queue's name. */
export const REPLY_TO = 'amq.rabbitmq.reply-to';

/** Where replies to one address go. */
export interface ReplyTarget {
  deliverReply(routingKey: string, properties: MessageProperties, body: Uint8Array): void;
}

/** The reply addresses of one server's channels. */
export class ReplyAddresses {
  readonly #targets = new Map<string, ReplyTarget>();

  /** A new address for `target`. */
  register(target: ReplyTarget): string {
    const address = `${REPLY_TO}.${randomBytes(18).toString('base64url')}`;
    this.#targets.set(address, target);
    return address;
  }

  remove(address: string): void {
    this.#targets.delete(address);
  }

  /** Whether a routing key on the default exchange is a reply address (live or not). */
  static isAddress(routingKey: string): boolean {
    return routingKey.startsWith(`${REPLY_TO}.`);
  }

  /** The target of an address, or undefined once its channel is gone. */
  find(address: string): ReplyTarget | undefined {
    return this.#targets.get(address);
  }
}
