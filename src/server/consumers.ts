/**
 * What one channel delivers: its consumers (basic.consume and cancel, the direct reply-to
 * consumer), basic.get, the channel's prefetch, and the settling of its deliveries (tagged and
 * tracked by deliveries.ts). Consumers pause while the socket does not drain or the channel's
 * global prefetch is full. A delivery is written straight into the connection's output: this is
 * the server's hottest path.
 */
import { NotImplementedError, queueResource } from '../errors.js';
import type { Message } from '../message/message.js';
import type { MessageProperties } from '../message/types.js';
import { ACK, generateConsumerTag, type Outcome, type Subscription } from '../queues/consumer.js';
import { QuorumQueue } from '../queues/quorum/quorum-queue.js';
import type { ChannelContext, ChannelHost } from './channel-host.js';
import { Deliveries } from './deliveries.js';
import { AmqpException } from './errors.js';
import type { MessageCounts } from './message-counts.js';
import { REPLY_TO, type ReplyTarget } from './reply-to.js';
import type { ChannelTopology } from './topology.js';
import { PropertiesCache, ShortstrCache, shortstrBytes, writeDelivery } from './wire/delivery.js';
import { writeContent, writeMethod } from './wire/methods.js';
import type { ArgsOf } from './wire/spec.js';

interface Consumer {
  readonly tag: string;
  /** The tag's wire bytes, written in every delivery. */
  readonly tagBytes: Buffer;
  subscription: Subscription;
  /** Deliveries carry `x-delivery-count` on the wire (a quorum queue's, as RabbitMQ writes it). */
  readonly relayCount: boolean;
  /** Cancelled by the client (or the channel closing): no server cancel to send. */
  quiet: boolean;
  readonly queue: string;
  readonly exclusive: boolean;
  readonly args: Readonly<Record<string, unknown>>;
  /** The queue's message counters and the vhost's totals, when the server keeps them. */
  readonly counts: MessageCounts | undefined;
  readonly totals: MessageCounts | undefined;
}

/** A consumer as the management API lists it. */
export interface ConsumerInfo {
  readonly tag: string;
  readonly queue: string;
  readonly ackRequired: boolean;
  readonly exclusive: boolean;
  readonly prefetch: number;
  readonly arguments: Readonly<Record<string, unknown>>;
}

export class ChannelConsumers implements ReplyTarget {
  readonly #channel: ChannelContext;
  readonly #host: ChannelHost;
  readonly #id: number;
  readonly #topology: ChannelTopology;
  readonly #deliveries = new Deliveries();
  readonly #consumers = new Map<string, Consumer>();
  #prefetch = 0;
  #globalPrefetch = 0;
  #paused = false;
  /** Wire bytes of the exchange and routing key names of the last deliveries. */
  readonly #exchangeBytes = new ShortstrCache();
  readonly #routingKeyBytes = new ShortstrCache();
  /** Encoded properties of the last deliveries. */
  readonly #propertiesBytes = new PropertiesCache();
  /** The consumer of `amq.rabbitmq.reply-to` on this channel, and its address. */
  #replyConsumer:
    | { readonly tag: string; readonly tagBytes: Buffer; readonly address: string }
    | undefined;

  constructor(channel: ChannelContext, topology: ChannelTopology) {
    this.#channel = channel;
    this.#host = channel.host;
    this.#id = channel.id;
    this.#topology = topology;
  }

  /** The channel's consumers (its reply consumer aside), for the management API. */
  list(): ConsumerInfo[] {
    return [...this.#consumers.values()].map((c) => ({
      tag: c.tag,
      queue: c.queue,
      ackRequired: !c.subscription.noAck,
      exclusive: c.exclusive,
      prefetch: this.#prefetch,
      arguments: c.args,
    }));
  }

  /** The prefetch of new consumers and of the whole channel (`basic.qos`). */
  get prefetch(): { readonly consumer: number; readonly global: number } {
    return { consumer: this.#prefetch, global: this.#globalPrefetch };
  }

  /** Deliveries waiting for an ack. */
  get unacked(): number {
    return this.#deliveries.unacked;
  }

  /** The channel's direct reply-to address, while it consumes its replies. */
  get replyAddress(): string | undefined {
    return this.#replyConsumer?.address;
  }

  /** Handles basic.qos. */
  qos(a: ArgsOf<'basic.qos'>): void {
    if (a.prefetchSize !== 0) throw new AmqpException(540, `prefetch_size!=0 (${a.prefetchSize})`);
    if (a.global) this.#globalPrefetch = a.prefetchCount;
    else this.#prefetch = a.prefetchCount;
    this.updatePause();
    this.#channel.reply('basic.qos-ok', {});
  }

  /** Handles basic.consume. */
  async consume(a: ArgsOf<'basic.consume'>): Promise<void> {
    const tag = a.consumerTag || generateConsumerTag();
    if (this.#consumers.has(tag)) {
      throw new AmqpException(530, `attempt to reuse consumer tag '${tag}'`);
    }
    if (a.queue === REPLY_TO) {
      this.#consumeReplies(tag, a);
      return;
    }
    const queue = await this.#topology.queue(a.queue);
    const quorum = queue instanceof QuorumQueue;
    if (quorum && this.#globalPrefetch > 0) {
      throw new NotImplementedError(
        `${queueResource({ name: queue.name, vhost: this.#topology.vhost })} does not support global qos`,
      );
    }
    let consumer: Consumer | undefined;
    // Paused until consume-ok is out: deliveries must follow it, and stop when the socket does.
    const subscription = await queue.subscribe(
      {
        tag,
        noAck: a.noAck,
        exclusive: a.exclusive,
        prefetch: this.#prefetch,
        args: a.arguments,
        manualAck: true,
        paused: true,
      },
      (message: Message) => this.#deliver(consumer!, message),
    );
    if (!this.#channel.open) {
      await subscription.close();
      return;
    }
    consumer = {
      tag,
      tagBytes: shortstrBytes(tag),
      subscription,
      relayCount: quorum,
      quiet: false,
      queue: queue.name,
      exclusive: a.exclusive,
      args: a.arguments,
      counts: this.#host.counts?.queue(queue.name),
      totals: this.#host.counts?.totals,
    };
    this.#consumers.set(tag, consumer);
    this.#deliveries.subscribed(subscription);
    subscription.onCancelled(() => this.#cancelled(consumer!));
    this.#channel.reply('basic.consume-ok', { consumerTag: tag }, a.nowait);
    if (!this.#paused) subscription.resume();
  }

  #consumeReplies(tag: string, a: ArgsOf<'basic.consume'>): void {
    if (!a.noAck) throw new AmqpException(406, 'reply consumer cannot acknowledge');
    if (this.#replyConsumer) throw new AmqpException(406, 'reply consumer already set');
    this.#replyConsumer = {
      tag,
      tagBytes: shortstrBytes(tag),
      address: this.#host.replies.register(this),
    };
    this.#channel.reply('basic.consume-ok', { consumerTag: tag }, a.nowait);
  }

  /** A reply published to this channel's address: delivered at once, no-ack. */
  deliverReply(routingKey: string, properties: MessageProperties, body: Uint8Array): void {
    const reply = this.#replyConsumer;
    if (!this.#channel.open || !reply) return;
    this.#writeDelivery(
      reply.tagBytes,
      this.#deliveries.nextTag(),
      false,
      '',
      routingKey,
      properties,
      body,
    );
  }

  /** A consumer's subscription ended: by the client, the channel, or its queue going away. */
  #cancelled(consumer: Consumer): void {
    if (this.#consumers.get(consumer.tag) === consumer) this.#consumers.delete(consumer.tag);
    const subscription = consumer.subscription;
    this.#deliveries.cancelled(subscription);
    if (consumer.quiet || !this.#channel.open || !this.#host.cancelNotify) return;
    this.#channel.notify((w) =>
      writeMethod(w, this.#id, 'basic.cancel', { consumerTag: consumer.tag, nowait: true }),
    );
  }

  /** Handles basic.cancel. */
  async cancel(a: ArgsOf<'basic.cancel'>): Promise<void> {
    if (this.#replyConsumer?.tag === a.consumerTag) {
      this.#host.replies.remove(this.#replyConsumer.address);
      this.#replyConsumer = undefined;
    }
    const consumer = this.#consumers.get(a.consumerTag);
    if (consumer) {
      consumer.quiet = true;
      await consumer.subscription.cancel();
    }
    this.#channel.reply('basic.cancel-ok', { consumerTag: a.consumerTag }, a.nowait);
  }

  #deliver(consumer: Consumer, message: Message): void {
    const deliveryTag = this.#deliveries.nextTag();
    const noAck = consumer.subscription.noAck;
    if (!noAck) this.#deliveries.track(deliveryTag, message, consumer.counts);
    const counts = consumer.counts;
    if (counts !== undefined) {
      // Plain increments of objects the consumer holds: this runs for every delivery.
      const totals = consumer.totals!;
      if (noAck) {
        counts.deliverNoAck++;
        totals.deliverNoAck++;
      } else {
        counts.deliver++;
        totals.deliver++;
      }
      if (message.redelivered) {
        counts.redeliver++;
        totals.redeliver++;
      }
    }
    this.#writeDelivery(
      consumer.tagBytes,
      deliveryTag,
      message.redelivered,
      message.exchange,
      message.routingKey,
      wireProperties(message, consumer.relayCount),
      message.storedBody,
    );
    if (this.#globalPrefetch > 0 && this.#deliveries.unacked >= this.#globalPrefetch) {
      this.updatePause();
    }
  }

  #writeDelivery(
    consumerTag: Uint8Array,
    deliveryTag: number,
    redelivered: boolean,
    exchange: string,
    routingKey: string,
    properties: Readonly<MessageProperties>,
    body: Uint8Array,
  ): void {
    const host = this.#host;
    // A confirm settled before this delivery goes out first.
    if (host.dueConfirms.pending) host.dueConfirms.flush();
    const out = host.output();
    if (!out) return;
    try {
      writeDelivery(
        out,
        this.#id,
        consumerTag,
        deliveryTag,
        redelivered,
        this.#exchangeBytes.bytes(exchange),
        this.#routingKeyBytes.bytes(routingKey),
        properties,
        body,
        host.frameMax,
        this.#propertiesBytes,
      );
    } catch (error) {
      host.outputFailed(error);
      return;
    }
    host.appended();
  }

  /** Handles basic.get. */
  async get(a: ArgsOf<'basic.get'>): Promise<void> {
    const queue = await this.#topology.queue(a.queue);
    const message = await queue.get({ noAck: a.noAck });
    if (!this.#channel.open) {
      if (message && !a.noAck) await message.nack(true);
      return;
    }
    const counts = this.#host.counts;
    if (!message) {
      if (counts !== undefined) {
        counts.queue(queue.name).getEmpty++;
        counts.totals.getEmpty++;
      }
      this.#channel.reply('basic.get-empty', { clusterId: '' });
      return;
    }
    const queueCounts = counts?.queue(queue.name);
    if (queueCounts !== undefined) countGet(queueCounts, counts!.totals, a.noAck, message);
    const deliveryTag = this.#deliveries.nextTag();
    if (!a.noAck) this.#deliveries.trackGet(deliveryTag, message, queueCounts);
    const frameMax = this.#host.frameMax;
    this.#host.write((w) => {
      writeMethod(w, this.#id, 'basic.get-ok', {
        deliveryTag,
        redelivered: message.redelivered,
        exchange: message.exchange,
        routingKey: message.routingKey,
        messageCount: message.messageCount ?? 0,
      });
      writeContent(
        w,
        this.#id,
        wireProperties(message, queue instanceof QuorumQueue),
        message.body,
        frameMax,
      );
    });
  }

  /**
   * Settles one delivery, or with `multiple` every one up to `tag` (0: all).
   * @throws AmqpException 406 for a tag that is not an unacknowledged delivery.
   */
  settle(tag: number, multiple: boolean, outcome: Outcome): void {
    const settled = this.#deliveries.settle(tag, multiple, outcome);
    const counts = this.#host.counts;
    if (outcome === ACK && counts !== undefined) counts.totals.ack += settled;
    if (this.#globalPrefetch > 0) this.updatePause();
  }

  /** Consumers wait while the socket is not draining or the channel's prefetch is full. */
  updatePause(): void {
    const full = this.#globalPrefetch > 0 && this.#deliveries.unacked >= this.#globalPrefetch;
    const paused = full || !this.#host.writable;
    if (paused === this.#paused) return;
    this.#paused = paused;
    for (const consumer of this.#consumers.values()) {
      if (paused) consumer.subscription.pause();
      else consumer.subscription.resume();
    }
  }

  /**
   * The channel ended: no consumer sends a cancel any more, and every unacknowledged delivery
   * returns to its queue.
   */
  async release(): Promise<void> {
    if (this.#replyConsumer) this.#host.replies.remove(this.#replyConsumer.address);
    this.#replyConsumer = undefined;
    for (const consumer of this.#consumers.values()) consumer.quiet = true;
    this.#consumers.clear();
    await this.#deliveries.release();
  }
}

/**
 * A delivery's properties as RabbitMQ 3.10 writes them: with the `x-stream-offset` of a stream,
 * without the `x-delivery-count` mqlite's classic queues add; a quorum queue's (`relayCount`)
 * keep it, as RabbitMQ's quorum queues write it.
 */
function wireProperties(message: Message, relayCount: boolean): Readonly<MessageProperties> {
  return message.deliveryHeader === 'x-delivery-count' && !relayCount
    ? message.storedProperties
    : message.properties;
}

/** Counts a basic.get in the queue's counts and the vhost's totals. */
function countGet(queue: MessageCounts, totals: MessageCounts, noAck: boolean, message: Message) {
  const field = noAck ? 'getNoAck' : 'get';
  queue[field]++;
  totals[field]++;
  if (message.redelivered) {
    queue.redeliver++;
    totals.redeliver++;
  }
}
