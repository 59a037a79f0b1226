/**
 * One AMQP channel: its methods mapped onto the broker, in the order they arrived. Deliveries are
 * tagged and settled per channel (deliveries.ts), publishes assembled from their content frames
 * (content.ts) and confirmed once stored; a channel exception closes the channel and leaves the
 * connection be.
 */

import type { Broker } from '../broker/broker.js';
import type { BrokerSession } from '../broker/session.js';
import { NoRouteError, QueueFullError } from '../errors.js';
import type { Message } from '../message/message.js';
import type { MessageProperties } from '../message/types.js';
import {
  ACK,
  DROP,
  generateConsumerTag,
  type Outcome,
  REQUEUE,
  type Subscription,
} from '../queues/consumer.js';
import { Confirms } from './confirms.js';
import { ContentAssembly, type Publish } from './content.js';
import { Deliveries } from './deliveries.js';
import { AmqpException, toAmqpException } from './errors.js';
import type { Permissions } from './permissions.js';
import { REPLY_TO, ReplyAddresses, type ReplyTarget } from './reply-to.js';
import { ChannelTopology } from './topology.js';
import type { Writer } from './wire/bytes.js';
import { ShortstrCache, shortstrBytes, writeDelivery } from './wire/delivery.js';
import { type OutArgs, writeContent, writeMethod } from './wire/methods.js';
import { type ArgsOf, type Method, type MethodName, methodByName } from './wire/spec.js';

/** What a channel needs from its connection. */
export interface ChannelHost {
  readonly broker: Broker;
  readonly session: BrokerSession;
  /** What the user may do in the vhost: every method is checked before it runs. */
  readonly permissions: Permissions;
  /** The authenticated user name (a publish's `user-id` must match it). */
  readonly user: string;
  /** Negotiated frame-max. */
  readonly frameMax: number;
  /** Largest body a publish may have. */
  readonly maxMessageBytes: number;
  /** The client announced `consumer_cancel_notify`. */
  readonly cancelNotify: boolean;
  /** False while the socket is not draining: deliveries then wait. */
  readonly writable: boolean;
  /** The server's direct reply-to addresses. */
  readonly replies: ReplyAddresses;
  /** Appends frames to the output. */
  write(build: (w: Writer) => void): void;
  /**
   * The output to append frames to directly, each batch followed by `appended()`; undefined once
   * the connection ended.
   */
  output(): Writer | undefined;
  /** Frames were appended to `output()`: they go out by the end of the turn. */
  appended(): void;
  /** Raises a connection exception. */
  fail(error: AmqpException, classId: number, methodId: number): void;
  /**
   * Counts work waiting for the broker: methods queued behind a slow one, publishes waiting for
   * storage. The connection stops reading its socket while much waits.
   */
  backlog(delta: number): void;
  /** The channel is closed and its number free. */
  released(channel: number): void;
}

interface Consumer {
  readonly tag: string;
  /** The tag's wire bytes, written in every delivery. */
  readonly tagBytes: Buffer;
  subscription: Subscription;
  /** Cancelled by the client (or the channel closing): no server cancel to send. */
  quiet: boolean;
}

type Task = () => void | Promise<void>;

/**
 * What one transaction may hold until its commit: RabbitMQ sets no bound (memory alarms stop the
 * publisher); past either, the channel closes with 406 and the transaction is discarded.
 */
export const TX_MAX_ACTIONS = 65_536;
export const TX_MAX_BYTES = 128 * 1024 * 1024;

export class AmqpChannel implements ReplyTarget {
  readonly id: number;
  readonly #host: ChannelHost;
  /** open → closing (channel.close sent, waiting for close-ok) → closed. */
  #state: 'open' | 'closing' | 'closed' = 'open';
  readonly #tasks: { task: Task; classId: number; methodId: number }[] = [];
  /** Whether a task is being awaited (it counts in the backlog). */
  #awaiting = false;
  #running = false;
  readonly #content: ContentAssembly;
  readonly #deliveries = new Deliveries();
  readonly #topology: ChannelTopology;
  readonly #consumers = new Map<string, Consumer>();
  #prefetch = 0;
  #globalPrefetch = 0;
  #paused = false;
  #confirms: Confirms | undefined;
  #tx: Task[] | undefined;
  /** Body bytes of the publishes `#tx` holds. */
  #txBytes = 0;
  /** Wire bytes of the exchange and routing key names of the last deliveries. */
  readonly #exchangeBytes = new ShortstrCache();
  readonly #routingKeyBytes = new ShortstrCache();
  /** The consumer of `amq.rabbitmq.reply-to` on this channel, and its address. */
  #replyConsumer:
    | { readonly tag: string; readonly tagBytes: Buffer; readonly address: string }
    | undefined;

  constructor(id: number, host: ChannelHost) {
    this.id = id;
    this.#host = host;
    this.#content = new ContentAssembly(host.maxMessageBytes);
    this.#topology = new ChannelTopology(host.broker, host.session);
  }

  /** Whether it waits for the content frames of a publish. */
  get expectsContent(): boolean {
    return this.#content.pending;
  }

  /** Handles a method frame for this channel (channel.open excepted: the connection's). */
  onMethod(method: Method): void {
    if (this.#state === 'closing') {
      // After channel.close, only close and close-ok count (AMQP 0-9-1 §4.2.8).
      if (method.name === 'channel.close-ok') this.#release();
      else if (method.name === 'channel.close') this.#reply('channel.close-ok', {});
      return;
    }
    if (this.#state === 'closed') return;
    if (this.#content.pending) {
      throw new AmqpException(
        505,
        `expected content header for class 60, got non content header frame instead`,
      );
    }
    if (method.name === 'basic.publish') {
      if (method.args.immediate) throw new AmqpException(540, 'immediate=true');
      this.#content.start(method.args);
      return;
    }
    if (method.name === 'basic.ack' && !this.#running && !this.#tx) {
      this.#ackNow(method.args.deliveryTag, method.args.multiple);
      return;
    }
    const { classId, methodId } = method.def;
    this.#enqueue(() => this.#dispatch(method), classId, methodId);
  }

  /** Handles a basic.ack, read in place by the connection (the same as its method frame). */
  onAck(deliveryTag: number, multiple: boolean): void {
    if (this.#state === 'open' && !this.#content.pending && !this.#running && !this.#tx) {
      this.#ackNow(deliveryTag, multiple);
    } else {
      const def = methodByName('basic.ack');
      this.onMethod({ name: def.name, def, args: { deliveryTag, multiple } } as Method);
    }
  }

  /** The most frequent method of all, settled at once when nothing runs before it. */
  #ackNow(deliveryTag: number, multiple: boolean): void {
    try {
      this.#settle(deliveryTag, multiple, ACK);
    } catch (error) {
      this.#exception(toAmqpException(error), 60, 80);
    }
  }

  /** Handles a content header frame. */
  onHeader(payload: Buffer): void {
    if (this.#state === 'open') this.#contentFrame(() => this.#content.header(payload));
  }

  /** Handles a content body frame. */
  onBody(payload: Buffer): void {
    if (this.#state === 'open') this.#contentFrame(() => this.#content.body(payload));
  }

  #contentFrame(take: () => Publish | undefined): void {
    let publish: Publish | undefined;
    try {
      publish = take();
    } catch (error) {
      if (!(error instanceof AmqpException) || error.closesConnection) throw error;
      this.#exception(error, 60, 40);
      return;
    }
    if (publish) this.#published(publish);
  }

  /** The socket stopped or started draining. */
  setWritable(): void {
    this.#updatePause();
  }

  /**
   * Ends the channel (closed by either side, or its connection gone): consumers are cancelled and
   * every unacknowledged delivery returns to its queue.
   */
  async teardown(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#host.backlog(-this.#tasks.length - (this.#awaiting ? 1 : 0));
    this.#tasks.length = 0;
    this.#awaiting = false;
    this.#tx = undefined;
    this.#content.reset();
    if (this.#replyConsumer) this.#host.replies.remove(this.#replyConsumer.address);
    this.#replyConsumer = undefined;
    for (const consumer of this.#consumers.values()) consumer.quiet = true;
    this.#consumers.clear();
    await this.#deliveries.release();
  }

  // --- the method sequence ----------------------------------------------------------------

  /**
   * Runs `task` after the ones before it. With none waiting it runs at once: acks and publishes,
   * which finish synchronously, then cost no queue entry and no promise.
   */
  #enqueue(task: Task, classId: number, methodId: number): void {
    if (this.#running) {
      // Queued methods count in the connection's backlog, which stops reading the socket.
      this.#tasks.push({ task, classId, methodId });
      this.#host.backlog(1);
      return;
    }
    let pending: void | Promise<void>;
    try {
      pending = task();
    } catch (error) {
      this.#exception(toAmqpException(error), classId, methodId);
      return;
    }
    if (pending instanceof Promise) {
      this.#host.backlog(1);
      void this.#run(pending, classId, methodId);
    }
  }

  /**
   * Waits for `pending`, the task that came first, then runs the queued ones in order. A task
   * counts in the backlog from when it is queued until it has finished.
   */
  async #run(pending: Promise<void>, classId: number, methodId: number): Promise<void> {
    this.#running = true;
    for (;;) {
      this.#awaiting = true;
      try {
        await pending;
      } catch (error) {
        this.#exception(toAmqpException(error), classId, methodId);
      }
      // A teardown meanwhile counted this task out with the queued ones.
      if (this.#awaiting) this.#host.backlog(-1);
      this.#awaiting = false;
      let next: void | Promise<void>;
      do {
        if (this.#tasks.length === 0 || this.#state !== 'open') {
          this.#running = false;
          return;
        }
        const entry = this.#tasks.shift()!;
        ({ classId, methodId } = entry);
        next = undefined;
        try {
          next = entry.task();
        } catch (error) {
          this.#exception(toAmqpException(error), classId, methodId);
        }
        // Finished at once; one still running stays counted until it has.
        if (!next) this.#host.backlog(-1);
      } while (!next);
      pending = next;
    }
  }

  /** Raises an exception caused by this channel's method `classId.methodId`. */
  #exception(error: AmqpException, classId: number, methodId: number): void {
    if (error.closesConnection) {
      this.#host.fail(error, classId, methodId);
      return;
    }
    if (this.#state !== 'open') return;
    this.#host.write((w) =>
      writeMethod(w, this.id, 'channel.close', {
        replyCode: error.replyCode,
        replyText: error.replyText,
        classId,
        methodId,
      }),
    );
    void this.teardown();
    // Torn down, it still waits for the peer's close-ok.
    this.#state = 'closing';
  }

  #release(): void {
    this.#state = 'closed';
    this.#host.released(this.id);
  }

  #reply<N extends MethodName>(name: N, args: OutArgs<N>, nowait = false): void {
    if (nowait || this.#state !== 'open') return;
    this.#host.write((w) => writeMethod(w, this.id, name, args));
  }

  #dispatch(method: Method): void | Promise<void> {
    this.#host.permissions.authorize(method, this.#topology);
    switch (method.name) {
      case 'channel.close':
        return this.teardown().then(() => {
          this.#host.write((w) => writeMethod(w, this.id, 'channel.close-ok', {}));
          this.#host.released(this.id);
        });
      case 'channel.close-ok':
        return;
      case 'channel.flow':
        // RabbitMQ does not stop deliveries on a client's request.
        if (!method.args.active) throw new AmqpException(540, 'active=false');
        return this.#reply('channel.flow-ok', { active: true });
      case 'channel.flow-ok':
        return;
      case 'exchange.declare':
        return this.#topology
          .declareExchange(method.args)
          .then(() => this.#reply('exchange.declare-ok', {}, method.args.nowait));
      case 'exchange.delete':
        return this.#host.broker
          .deleteExchange(method.args.exchange, { ifUnused: method.args.ifUnused })
          .then(() => this.#reply('exchange.delete-ok', {}, method.args.nowait));
      case 'exchange.bind':
        return this.#topology
          .bindExchange(method.args)
          .then(() => this.#reply('exchange.bind-ok', {}, method.args.nowait));
      case 'exchange.unbind':
        return this.#topology
          .unbindExchange(method.args)
          .then(() => this.#reply('exchange.unbind-ok', {}, method.args.nowait));
      case 'queue.declare':
        return this.#topology
          .declareQueue(method.args)
          .then((ok) => this.#reply('queue.declare-ok', ok, method.args.nowait));
      case 'queue.bind': {
        const { exchange, routingKey, arguments: args, nowait } = method.args;
        return this.#topology
          .queue(method.args.queue)
          .then(async (q) => {
            await q.bind(exchange, routingKey, args);
          })
          .then(() => this.#reply('queue.bind-ok', {}, nowait));
      }
      case 'queue.unbind': {
        const { exchange, routingKey, arguments: args } = method.args;
        return this.#topology
          .queue(method.args.queue)
          .then(async (q) => {
            await q.unbind(exchange, routingKey, args);
          })
          .then(() => this.#reply('queue.unbind-ok', {}));
      }
      case 'queue.purge':
        return this.#topology
          .queue(method.args.queue)
          .then((q) => q.purge())
          .then((messageCount) =>
            this.#reply('queue.purge-ok', { messageCount }, method.args.nowait),
          );
      case 'queue.delete':
        return this.#topology
          .deleteQueue(method.args)
          .then((messageCount) =>
            this.#reply('queue.delete-ok', { messageCount }, method.args.nowait),
          );
      case 'basic.qos':
        return this.#qos(method.args);
      case 'basic.consume':
        return this.#consume(method.args);
      case 'basic.cancel':
        return this.#cancel(method.args);
      case 'basic.get':
        return this.#get(method.args);
      case 'basic.ack':
        return this.#transacted(() =>
          this.#settle(method.args.deliveryTag, method.args.multiple, ACK),
        );
      case 'basic.nack': {
        const { deliveryTag, multiple, requeue } = method.args;
        return this.#transacted(() =>
          this.#settle(deliveryTag, multiple, requeue ? REQUEUE : DROP),
        );
      }
      case 'basic.reject': {
        const { deliveryTag, requeue } = method.args;
        return this.#transacted(() => this.#settle(deliveryTag, false, requeue ? REQUEUE : DROP));
      }
      case 'basic.recover':
      case 'basic.recover-async':
        this.#settle(0, true, REQUEUE);
        if (method.name === 'basic.recover') this.#reply('basic.recover-ok', {});
        return;
      case 'confirm.select':
        if (this.#tx) {
          throw new AmqpException(406, 'cannot switch from tx to confirm mode');
        }
        this.#confirms ??= new Confirms((kind, deliveryTag, multiple) => {
          if (this.#state !== 'open') return;
          this.#host.write((w) =>
            kind === 'ack'
              ? writeMethod(w, this.id, 'basic.ack', { deliveryTag, multiple })
              : writeMethod(w, this.id, 'basic.nack', { deliveryTag, multiple, requeue: false }),
          );
        });
        return this.#reply('confirm.select-ok', {}, method.args.nowait);
      case 'tx.select':
        if (this.#confirms) throw new AmqpException(406, 'cannot switch from confirm to tx mode');
        this.#tx ??= [];
        return this.#reply('tx.select-ok', {});
      case 'tx.commit':
        return this.#commit();
      case 'tx.rollback':
        if (!this.#tx) throw new AmqpException(406, 'channel is not transactional');
        this.#tx = [];
        this.#txBytes = 0;
        return this.#reply('tx.rollback-ok', {});
      default:
        throw new AmqpException(
          540,
          `method '${method.name}' is not implemented on a server channel`,
        );
    }
  }

  // --- consuming ---------------------------------------------------------------------------

  #qos(a: ArgsOf<'basic.qos'>): void {
    if (a.prefetchSize !== 0) throw new AmqpException(540, `prefetch_size!=0 (${a.prefetchSize})`);
    if (a.global) this.#globalPrefetch = a.prefetchCount;
    else this.#prefetch = a.prefetchCount;
    this.#updatePause();
    this.#reply('basic.qos-ok', {});
  }

  async #consume(a: ArgsOf<'basic.consume'>): Promise<void> {
    const tag = a.consumerTag || generateConsumerTag();
    if (this.#consumers.has(tag)) {
      throw new AmqpException(530, `attempt to reuse consumer tag '${tag}'`);
    }
    if (a.queue === REPLY_TO) {
      this.#consumeReplies(tag, a);
      return;
    }
    const queue = await this.#topology.queue(a.queue);
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
    if (this.#state !== 'open') {
      await subscription.close();
      return;
    }
    consumer = { tag, tagBytes: shortstrBytes(tag), subscription, quiet: false };
    this.#consumers.set(tag, consumer);
    this.#deliveries.subscribed(subscription);
    subscription.onCancelled(() => this.#cancelled(consumer!));
    this.#reply('basic.consume-ok', { consumerTag: tag }, a.nowait);
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
    this.#reply('basic.consume-ok', { consumerTag: tag }, a.nowait);
  }

  /** A reply published to this channel's address: delivered at once, no-ack. */
  deliverReply(routingKey: string, properties: MessageProperties, body: Uint8Array): void {
    const reply = this.#replyConsumer;
    if (this.#state !== 'open' || !reply) return;
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
    if (consumer.quiet || this.#state !== 'open' || !this.#host.cancelNotify) return;
    this.#host.write((w) =>
      writeMethod(w, this.id, 'basic.cancel', { consumerTag: consumer.tag, nowait: true }),
    );
  }

  async #cancel(a: ArgsOf<'basic.cancel'>): Promise<void> {
    if (this.#replyConsumer?.tag === a.consumerTag) {
      this.#host.replies.remove(this.#replyConsumer.address);
      this.#replyConsumer = undefined;
    }
    const consumer = this.#consumers.get(a.consumerTag);
    if (consumer) {
      consumer.quiet = true;
      await consumer.subscription.cancel();
    }
    this.#reply('basic.cancel-ok', { consumerTag: a.consumerTag }, a.nowait);
  }

  #deliver(consumer: Consumer, message: Message): void {
    const deliveryTag = this.#deliveries.nextTag();
    if (!consumer.subscription.noAck) this.#deliveries.track(deliveryTag, message);
    this.#writeDelivery(
      consumer.tagBytes,
      deliveryTag,
      message.redelivered,
      message.exchange,
      message.routingKey,
      wireProperties(message),
      message.storedBody,
    );
    if (this.#globalPrefetch > 0 && this.#deliveries.unacked >= this.#globalPrefetch) {
      this.#updatePause();
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
    const out = host.output();
    if (!out) return;
    writeDelivery(
      out,
      this.id,
      consumerTag,
      deliveryTag,
      redelivered,
      this.#exchangeBytes.bytes(exchange),
      this.#routingKeyBytes.bytes(routingKey),
      properties,
      body,
      host.frameMax,
    );
    host.appended();
  }

  async #get(a: ArgsOf<'basic.get'>): Promise<void> {
    const queue = await this.#topology.queue(a.queue);
    const message = await queue.get({ noAck: a.noAck });
    if (this.#state !== 'open') {
      if (message && !a.noAck) await message.nack(true);
      return;
    }
    if (!message) {
      this.#reply('basic.get-empty', { clusterId: '' });
      return;
    }
    const deliveryTag = this.#deliveries.nextTag();
    if (!a.noAck) this.#deliveries.trackGet(deliveryTag, message);
    const frameMax = this.#host.frameMax;
    this.#host.write((w) => {
      writeMethod(w, this.id, 'basic.get-ok', {
        deliveryTag,
        redelivered: message.redelivered,
        exchange: message.exchange,
        routingKey: message.routingKey,
        messageCount: message.messageCount ?? 0,
      });
      writeContent(w, this.id, wireProperties(message), message.body, frameMax);
    });
  }

  /** Settles one delivery, or with `multiple` every one up to `tag` (0: all). */
  #settle(tag: number, multiple: boolean, outcome: Outcome): void {
    this.#deliveries.settle(tag, multiple, outcome);
    if (this.#globalPrefetch > 0) this.#updatePause();
  }

  /** Consumers wait while the socket is not draining or the channel's prefetch is full. */
  #updatePause(): void {
    const full = this.#globalPrefetch > 0 && this.#deliveries.unacked >= this.#globalPrefetch;
    const paused = full || !this.#host.writable;
    if (paused === this.#paused) return;
    this.#paused = paused;
    for (const consumer of this.#consumers.values()) {
      if (paused) consumer.subscription.pause();
      else consumer.subscription.resume();
    }
  }

  // --- publishing --------------------------------------------------------------------------

  #published(content: Publish): void {
    this.#content.reset();
    const publish = () => this.#publish(content);
    this.#enqueue(
      () => {
        this.#host.permissions.publish(
          content.args.exchange,
          content.args.routingKey,
          this.#topology,
        );
        return this.#transacted(publish, content.body.length);
      },
      60,
      40,
    );
  }

  /**
   * Runs `task` now, or keeps it for `tx.commit` in a transactional channel.
   * @throws AmqpException 406 when the transaction would hold more than its bounds.
   */
  #transacted(task: Task, bytes = 0): void | Promise<void> {
    const tx = this.#tx;
    if (!tx) return task();
    if (tx.length >= TX_MAX_ACTIONS || this.#txBytes + bytes > TX_MAX_BYTES) {
      throw new AmqpException(
        406,
        `transaction holds more than ${TX_MAX_ACTIONS} publishes and acknowledgements or ${TX_MAX_BYTES} bytes; commit more often`,
      );
    }
    tx.push(task);
    this.#txBytes += bytes;
  }

  async #commit(): Promise<void> {
    const tasks = this.#tx;
    if (!tasks) throw new AmqpException(406, 'channel is not transactional');
    this.#tx = [];
    this.#txBytes = 0;
    for (const task of tasks) await task();
    this.#reply('tx.commit-ok', {});
  }

  #publish(content: Publish): void | Promise<void> {
    const { exchange, routingKey, mandatory } = content.args;
    const properties = content.properties;
    if (properties.userId !== undefined && properties.userId !== this.#host.user) {
      throw new AmqpException(
        406,
        `user_id property set to '${properties.userId}' but authenticated user was '${this.#host.user}'`,
      );
    }
    const host = this.#host;
    let replyTo = properties.replyTo;
    if (replyTo === REPLY_TO) {
      if (!this.#replyConsumer) throw new AmqpException(406, 'fast reply consumer does not exist');
      replyTo = this.#replyConsumer.address;
    }
    const seq = this.#confirms?.take();
    if (exchange === '' && ReplyAddresses.isAddress(routingKey)) {
      // A reply: straight to its channel; one whose channel is gone is dropped, as RabbitMQ does.
      host.replies.find(routingKey)?.deliverReply(routingKey, properties, content.body);
      if (seq !== undefined) this.#confirms!.settle(seq, true);
      return;
    }
    host.backlog(1);
    const stored = host.broker.publish(exchange, content.body, {
      ...properties,
      ...(replyTo !== undefined && { replyTo }),
      routingKey,
      mandatory,
    });
    const done = stored.then(
      () => {
        host.backlog(-1);
        if (seq !== undefined) this.#confirms!.settle(seq, true);
      },
      (error: unknown) => {
        host.backlog(-1);
        if (error instanceof NoRouteError) {
          this.#return(content, 312, 'NO_ROUTE');
          if (seq !== undefined) this.#confirms!.settle(seq, true);
        } else if (error instanceof QueueFullError) {
          if (seq !== undefined) this.#confirms!.settle(seq, false);
        } else {
          if (seq !== undefined) this.#confirms!.settle(seq, false);
          this.#exception(toAmqpException(error), 60, 40);
        }
      },
    );
    // A transaction's commit waits for its publishes; otherwise the next method need not.
    return this.#tx ? done : undefined;
  }

  #return(content: Publish, replyCode: number, replyText: string): void {
    if (this.#state !== 'open') return;
    const { exchange, routingKey } = content.args;
    const frameMax = this.#host.frameMax;
    this.#host.write((w) => {
      writeMethod(w, this.id, 'basic.return', { replyCode, replyText, exchange, routingKey });
      writeContent(w, this.id, content.properties, content.body, frameMax);
    });
  }
}

/**
 * A delivery's properties as RabbitMQ 3.10 writes them: with the `x-stream-offset` of a stream,
 * without the `x-delivery-count` mqlite's classic queues add (RabbitMQ's quorum queues write it).
 */
function wireProperties(message: Message): Readonly<MessageProperties> {
  return message.deliveryHeader === 'x-delivery-count'
    ? message.storedProperties
    : message.properties;
}
