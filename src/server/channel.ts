/**
 * One AMQP channel: its methods mapped onto the broker, in the order they arrived. The exchange
 * and queue methods are broker calls (topology.ts); consumers, gets and their deliveries are the
 * channel's consumers (consumers.ts); publishes are assembled from their content frames
 * (content.ts), then published (publishes.ts), held in tx mode until the commit
 * (transaction.ts). A channel exception closes the channel and leaves the connection be.
 */

import { ACK, DROP, REQUEUE } from '../queues/consumer.js';
import type { ChannelContext, ChannelHost } from './channel-host.js';
import { ChannelConsumers } from './consumers.js';
import { ContentAssembly, type Publish } from './content.js';
import { AmqpException, toAmqpException } from './errors.js';
import { ChannelPublishes } from './publishes.js';
import { ChannelTopology } from './topology.js';
import { Transaction } from './transaction.js';
import type { Writer } from './wire/bytes.js';
import { type OutArgs, writeMethod } from './wire/methods.js';
import { type Method, type MethodName, methodByName } from './wire/spec.js';

type Task = () => void | Promise<void>;

export class AmqpChannel implements ChannelContext {
  readonly id: number;
  readonly host: ChannelHost;
  /** open → closing (channel.close sent, waiting for close-ok) → closed. */
  #state: 'open' | 'closing' | 'closed' = 'open';
  readonly #tasks: { task: Task; classId: number; methodId: number }[] = [];
  /** Whether a task is being awaited (it counts in the backlog). */
  #awaiting = false;
  #running = false;
  /** A method runs: notifications it causes wait for its reply (see `notify`). */
  #inMethod = false;
  readonly #held: ((w: Writer) => void)[] = [];
  readonly #content: ContentAssembly;
  readonly #topology: ChannelTopology;
  readonly #consumers: ChannelConsumers;
  readonly #publishes: ChannelPublishes;
  #tx: Transaction | undefined;

  constructor(id: number, host: ChannelHost) {
    this.id = id;
    this.host = host;
    this.#content = new ContentAssembly(host.maxMessageBytes);
    this.#topology = new ChannelTopology(host.broker, host.session);
    this.#consumers = new ChannelConsumers(this, this.#topology);
    this.#publishes = new ChannelPublishes(this, this.#consumers);
  }

  /** What the management API lists of the channel: its consumers, prefetch and unacked. */
  get consumers(): ChannelConsumers {
    return this.#consumers;
  }

  get open(): boolean {
    return this.#state === 'open';
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
      else if (method.name === 'channel.close') this.reply('channel.close-ok', {});
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
      this.#consumers.settle(deliveryTag, multiple, ACK);
    } catch (error) {
      this.exception(this.#toException(error), 60, 80);
    }
  }

  #toException(error: unknown): AmqpException {
    return toAmqpException(error, this.host.broker.closed);
  }

  /** Handles a content header frame (`header`) or body frame, its payload `bytes[start, end)`. */
  onContent(header: boolean, bytes: Buffer, start: number, end: number): void {
    if (this.#state !== 'open') return;
    let publish: Publish | undefined;
    try {
      // A header is read in place; a body is kept, so it gets a view.
      publish = header
        ? this.#content.header(bytes, start, end)
        : this.#content.body(bytes.subarray(start, end));
    } catch (error) {
      if (!(error instanceof AmqpException) || error.closesConnection) throw error;
      this.exception(error, 60, 40);
      return;
    }
    if (publish) this.#published(publish);
  }

  /** A publish is complete: it runs in turn, or waits in the transaction for the commit. */
  #published(content: Publish): void {
    this.#content.reset();
    if (this.#running) {
      this.#enqueue(() => this.#publish(content), 60, 40);
      return;
    }
    // Nothing runs before it: it runs at once, as `#enqueue` runs a task that finishes at once,
    // without a task made for it (a publish arrives with every message).
    this.#inMethod = true;
    try {
      this.#publish(content);
    } catch (error) {
      this.exception(this.#toException(error), 60, 40);
    }
    this.#methodDone();
  }

  /** Publishes (the broker confirms in its own time), or holds it in the transaction. */
  #publish(content: Publish): void {
    const { exchange, routingKey } = content.args;
    this.host.permissions.publish(exchange, routingKey, this.#topology);
    const tx = this.#tx;
    if (!tx) {
      void this.#publishes.publish(content);
      return;
    }
    // RabbitMQ refuses a transaction's publish to a missing or internal exchange at once; its
    // commit waits for what it publishes.
    this.host.broker.checkPublish(exchange);
    tx.hold(() => this.#publishes.publish(content), content.body.length);
  }

  /** The socket stopped or started draining. */
  setWritable(): void {
    this.#consumers.updatePause();
  }

  /**
   * Ends the channel (closed by either side, or its connection gone): consumers are cancelled and
   * every unacknowledged delivery returns to its queue.
   */
  async teardown(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.host.backlog(-this.#tasks.length - (this.#awaiting ? 1 : 0));
    this.#tasks.length = 0;
    this.#held.length = 0;
    this.#awaiting = false;
    this.#tx = undefined;
    this.#content.reset();
    await this.#consumers.release();
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
      this.host.backlog(1);
      return;
    }
    let pending: void | Promise<void>;
    this.#inMethod = true;
    try {
      pending = task();
    } catch (error) {
      this.exception(this.#toException(error), classId, methodId);
      this.#methodDone();
      return;
    }
    if (!(pending instanceof Promise)) this.#methodDone();
    else {
      this.host.backlog(1);
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
        this.exception(this.#toException(error), classId, methodId);
      }
      this.#methodDone();
      // A teardown meanwhile counted this task out with the queued ones.
      if (this.#awaiting) this.host.backlog(-1);
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
        this.#inMethod = true;
        try {
          next = entry.task();
        } catch (error) {
          this.exception(this.#toException(error), classId, methodId);
        }
        // Finished at once; one still running stays counted until it has.
        if (!next) {
          this.#methodDone();
          this.host.backlog(-1);
        }
      } while (!next);
      pending = next;
    }
  }

  /**
   * Sends a notification the server raises itself (a consumer's `basic.cancel`): after the reply
   * of the method that caused it, as RabbitMQ's channel answers the method first (a
   * `queue.delete` of a queue the channel consumes: `delete-ok`, then the cancel).
   */
  notify(build: (w: Writer) => void): void {
    if (this.#state !== 'open') return;
    if (this.#inMethod) this.#held.push(build);
    else this.host.write(build);
  }

  /** The running method finished, its reply sent: the notifications it caused follow. */
  #methodDone(): void {
    this.#inMethod = false;
    if (this.#held.length === 0) return;
    const held = this.#held.splice(0);
    if (this.#state === 'open') for (const build of held) this.host.write(build);
  }

  exception(error: AmqpException, classId: number, methodId: number): void {
    if (error.closesConnection) {
      this.host.fail(error, classId, methodId);
      return;
    }
    if (this.#state !== 'open') return;
    this.host.write((w) =>
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
    this.host.released(this.id);
  }

  reply<N extends MethodName>(name: N, args: OutArgs<N>, nowait = false): void {
    if (nowait || this.#state !== 'open') return;
    this.host.write((w) => writeMethod(w, this.id, name, args));
  }

  #dispatch(method: Method): void | Promise<void> {
    this.host.permissions.authorize(method, this.#topology);
    switch (method.name) {
      case 'channel.close':
        return this.teardown().then(() => {
          this.host.write((w) => writeMethod(w, this.id, 'channel.close-ok', {}));
          this.host.released(this.id);
        });
      case 'channel.close-ok':
        return;
      case 'channel.flow':
        // RabbitMQ does not stop deliveries on a client's request.
        if (!method.args.active) throw new AmqpException(540, 'active=false');
        return this.reply('channel.flow-ok', { active: true });
      case 'channel.flow-ok':
        return;
      case 'exchange.declare':
        return this.#topology
          .declareExchange(method.args)
          .then(() => this.reply('exchange.declare-ok', {}, method.args.nowait));
      case 'exchange.delete':
        return this.#topology
          .deleteExchange(method.args)
          .then(() => this.reply('exchange.delete-ok', {}, method.args.nowait));
      case 'exchange.bind':
        return this.#topology
          .bindExchange(method.args)
          .then(() => this.reply('exchange.bind-ok', {}, method.args.nowait));
      case 'exchange.unbind':
        return this.#topology
          .unbindExchange(method.args)
          .then(() => this.reply('exchange.unbind-ok', {}, method.args.nowait));
      case 'queue.declare':
        return this.#topology
          .declareQueue(method.args)
          .then((ok) => this.reply('queue.declare-ok', ok, method.args.nowait));
      case 'queue.bind':
        return this.#topology
          .bindQueue(method.args)
          .then(() => this.reply('queue.bind-ok', {}, method.args.nowait));
      case 'queue.unbind':
        return this.#topology
          .unbindQueue(method.args)
          .then(() => this.reply('queue.unbind-ok', {}));
      case 'queue.purge':
        return this.#topology
          .purgeQueue(method.args)
          .then((messageCount) =>
            this.reply('queue.purge-ok', { messageCount }, method.args.nowait),
          );
      case 'queue.delete':
        return this.#topology
          .deleteQueue(method.args)
          .then((messageCount) =>
            this.reply('queue.delete-ok', { messageCount }, method.args.nowait),
          );
      case 'basic.qos':
        return this.#consumers.qos(method.args);
      case 'basic.consume':
        return this.#consumers.consume(method.args);
      case 'basic.cancel':
        return this.#consumers.cancel(method.args);
      case 'basic.get':
        return this.#consumers.get(method.args);
      case 'basic.ack':
        return this.#transacted(() =>
          this.#consumers.settle(method.args.deliveryTag, method.args.multiple, ACK),
        );
      case 'basic.nack': {
        const { deliveryTag, multiple, requeue } = method.args;
        return this.#transacted(() =>
          this.#consumers.settle(deliveryTag, multiple, requeue ? REQUEUE : DROP),
        );
      }
      case 'basic.reject': {
        const { deliveryTag, requeue } = method.args;
        return this.#transacted(() =>
          this.#consumers.settle(deliveryTag, false, requeue ? REQUEUE : DROP),
        );
      }
      case 'basic.recover':
      case 'basic.recover-async':
        this.#consumers.settle(0, true, REQUEUE);
        if (method.name === 'basic.recover') this.reply('basic.recover-ok', {});
        return;
      case 'confirm.select':
        if (this.#tx) {
          throw new AmqpException(406, 'cannot switch from tx to confirm mode');
        }
        this.#publishes.selectConfirms();
        return this.reply('confirm.select-ok', {}, method.args.nowait);
      case 'tx.select':
        if (this.#publishes.confirming) {
          throw new AmqpException(406, 'cannot switch from confirm to tx mode');
        }
        this.#tx ??= new Transaction();
        return this.reply('tx.select-ok', {});
      case 'tx.commit':
        return this.#commit();
      case 'tx.rollback':
        if (!this.#tx) throw new AmqpException(406, 'channel is not transactional');
        this.#tx.rollback();
        return this.reply('tx.rollback-ok', {});
      default:
        throw new AmqpException(
          540,
          `method '${method.name}' is not implemented on a server channel`,
        );
    }
  }

  /**
   * Runs `task` now, or keeps it for `tx.commit` in a transactional channel.
   * @throws AmqpException 406 when the transaction would hold more than its bounds.
   */
  #transacted(task: Task, bytes = 0): void | Promise<void> {
    const tx = this.#tx;
    if (!tx) return task();
    tx.hold(task, bytes);
  }

  async #commit(): Promise<void> {
    const tx = this.#tx;
    if (!tx) throw new AmqpException(406, 'channel is not transactional');
    await tx.commit();
    this.reply('tx.commit-ok', {});
  }
}
