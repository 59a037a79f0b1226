/**
 * The machinery every classic queue shares (the plain FIFO queue, the priority queue, the
 * last-value queue): consumers and round-robin dispatch within prefetch, single active consumer,
 * exclusive consumers, consumer priorities, pull `get`/`consumeOne`, acks and requeues to the
 * original position, delivery counts, message TTL, queue expiry, length limits and
 * dead-lettering. Where the messages live and in which order they go out is the `ReadyStore`'s
 * business; this class never looks inside it. Rules with a state or a question of their own sit
 * beside it: message TTL (`MessageTtl`), `x-expires` (`QueueExpiry`), sending dead letters
 * (`DeadLetterSender`), length limits, admitting a consumer, waiting for one message, the clock
 * read once per tick (`TickTime`), and opening (`classic-options.ts`).
 */

import type { Clock } from '../../clock.js';
import {
  type DropReason,
  dropChannel,
  type ErrorHandler,
  type ErrorSource,
  reportError,
  warnOnError,
} from '../../diagnostics.js';
import { ClosedError, DEFAULT_VHOST, QueueFullError } from '../../errors.js';
import { checkGeoHeaders } from '../../filters/index.js';
import type { Message } from '../../message/message.js';
import { normalizeMessage, ownBody } from '../../message/normalize.js';
import type { MessageProperties, PublishBody, StoredMessage } from '../../message/types.js';
import type { Namespace, StorageAdapter } from '../../storage/types.js';
import { type ClassicArguments, classicArgumentsDiff } from '../arguments.js';
import {
  type ConsumerCallback,
  type ConsumerHost,
  type SubscribeParams,
  Subscription,
} from '../consumer.js';
import { releaseQueueStorage } from '../release-storage.js';
import { ActiveHandover } from './active-handover.js';
import type { ClassicQueueInit } from './classic-options.js';
import { storeInconsistency } from './consistency.js';
import { waitForOne } from './consume-one.js';
import { admitConsumer } from './consumer-admission.js';
import { ConsumerRotation } from './consumer-rotation.js';
import type { DeathReason } from './dead-letter.js';
import { runDeadLetterHops } from './dead-letter-hops.js';
import { atLeastOnce, DeadLetterSender } from './dead-letter-sender.js';
import { hasLengthLimit, overLengthLimit, PublishGate } from './length-limit.js';
import { MessageTtl } from './message-ttl.js';
import { QueueExpiry } from './queue-expiry.js';
import type { ClassicQueueStats } from './queue-stats.js';
import { NO_HANDLE, type ReadyStore } from './ready-store.js';
import { TickTime } from './tick-time.js';

export type { ClassicQueueStats } from './queue-stats.js';

/** The header of deliveries that says how many times the message was delivered before. */
const DELIVERY_COUNT = 'x-delivery-count';

/**
 * A classic AMQP queue over a `ReadyStore`. Concrete kinds (`Queue`, `PriorityQueue`,
 * `LastValueQueue`, `QuorumQueue`) provide the store and an `open()`.
 */
export class ClassicQueue implements AsyncDisposable {
  /** Queue name. */
  readonly name: string;
  /** The queue's validated arguments, as declared. */
  readonly arguments: ClassicArguments;

  /** @internal */
  protected readonly store: ReadyStore;
  protected readonly clock: Clock;
  readonly #storage: StorageAdapter;
  readonly #ownsStorage: boolean;
  readonly #namespace: Namespace;
  readonly #deadLetters: DeadLetterSender;
  readonly #onDelete: ((name: string) => void) | undefined;
  readonly #onError: ErrorHandler;
  readonly #strict: boolean;
  readonly #vhost: string;
  readonly #countAlways: boolean;
  /** Length limits count as a classic queue's do (see `ClassicQueueInit.lengthLimits`). */
  readonly #classicLimits: boolean;
  /** `reject-publish` as a quorum queue applies it; undefined on a classic queue. */
  readonly #gate: PublishGate | undefined;
  /** The limits in force: the declared arguments, or what `applyLimits` set. */
  #limits: ClassicArguments;

  /** Consumers in registration order (the single active consumer is the first). */
  readonly #consumers: Subscription<number>[] = [];
  /** Who gets the next message, by `x-priority` and round-robin. */
  readonly #rotation = new ConsumerRotation<number>();
  #exclusive = false;
  /** Open browsers: they acquire nothing but, as consumers, keep `x-expires` away. */
  #browsers = 0;
  readonly #host: ConsumerHost<number>;
  readonly #handover = new ActiveHandover(() => this.#dispatch());
  /** Earlier deliveries of stored messages that came back (requeued or recovered); absent: 0. */
  readonly #deliveries = new Map<number, number>();
  readonly #ttl: MessageTtl;
  readonly #expires: QueueExpiry;
  #dispatching = false;
  /**
   * Messages requeued in this synchronous run of requeues into a queue whose limit drops heads:
   * at its end the limit applies, then their TTL (`#endRequeueRun`).
   */
  readonly #requeueRun: number[] = [];
  /** A requeue happened: the next delivery round waits for a macrotask (no hot nack loops). */
  #dispatchDeferred = false;
  /**
   * A quorum queue's requeue left it past a limit that drops heads: it drops them after that
   * delivery round, as RabbitMQ's quorum queue applies its limit once consumers took their share.
   */
  #dropAfterDispatch = false;
  #getChannel: Subscription<number> | undefined;
  #getNoAckChannel: Subscription<number> | undefined;
  readonly #tickTime: TickTime;
  /** The last publish still waiting for its level's store to open, if any. */
  #pendingEnqueue: Promise<unknown> | undefined;
  #closed = false;

  /** @internal Built by the queue kinds' `open()`. */
  protected constructor(init: ClassicQueueInit) {
    this.name = init.name;
    this.arguments = init.arguments;
    this.#limits = init.arguments;
    this.store = init.store;
    this.clock = init.clock;
    this.#tickTime = new TickTime(init.clock);
    this.#storage = init.storage;
    this.#ownsStorage = init.ownsStorage;
    this.#namespace = init.namespace;
    this.#deadLetters = new DeadLetterSender(this, init.clock, init.deadLetter, (error) =>
      this.reportError(error, 'dead-letter'),
    );
    this.#onDelete = init.onDelete;
    this.#onError = init.onError ?? warnOnError;
    this.#strict = init.strict === true;
    this.#vhost = init.vhost ?? DEFAULT_VHOST;
    this.#countAlways = init.deliveryCountHeader !== 'redeliveries';
    this.#classicLimits = init.lengthLimits !== 'quorum';
    if (!this.#classicLimits) {
      const gate = new PublishGate();
      this.#gate = gate;
      // A queue that reopens past a limit refuses publishes, as it did.
      gate.added(init.arguments, init.store, { count: 0, bytes: 0 });
      init.store.onReadyRemoved = () => {
        if (gate.refusing !== undefined)
          gate.removed(this.#limits, this.store, this.#deadLetters.held);
      };
    }
    this.#expires = new QueueExpiry(init.clock, () => this.#expired());
    this.#ttl = new MessageTtl(
      init.clock,
      init.store,
      init.arguments.messageTtl,
      (handle) => this.#expire(handle),
      (error) => this.reportError(error, 'expiry'),
    );
    this.#host = {
      onAck: (consumer, handle) => {
        this.#settle(handle);
        if (this.#handover.waiting) this.#handover.settled(consumer);
      },
      onReject: (consumer, handle, requeue) => {
        // It rejoins the line first, as on RabbitMQ: what the reject dead-letters may come back.
        this.#rotation.freed(consumer);
        this.#reject(handle, requeue);
        if (this.#handover.waiting) this.#handover.settled(consumer);
      },
      onCapacity: (consumer) => {
        this.#rotation.freed(consumer);
        this.#dispatch();
      },
      onCancel: (consumer) => this.#removeConsumer(consumer),
      onCallbackError: (consumer, error) =>
        this.reportError(error, 'consumer', consumer.consumerTag),
    };
    init.store.onDisplaced = (handle) => {
      if (this.#deliveries.size > 0) this.#deliveries.delete(handle);
    };
    this.#recover();
  }

  /** Ready messages (what AMQP reports as the message count). */
  get messageCount(): number {
    return this.store.readyCount;
  }

  /** Active consumers. */
  get consumerCount(): number {
    return this.#consumers.length;
  }

  /** Counts and bytes of ready and unacknowledged messages, and consumers. */
  stats(): ClassicQueueStats {
    const s = this.store;
    return {
      messages: s.readyCount + s.inFlightCount,
      messagesReady: s.readyCount,
      messagesUnacknowledged: s.inFlightCount,
      messageBytes: s.readyBytes + s.inFlightBytes,
      messageBytesReady: s.readyBytes,
      messageBytesUnacknowledged: s.inFlightBytes,
      consumers: this.#consumers.length,
      browsers: this.#browsers,
    };
  }

  /**
   * @internal Throws when the queue's bookkeeping contradicts itself (a negative count, a ready
   * count its messages do not add up to): the invariant tests check after every step.
   */
  assertConsistent(): void {
    const wrong = storeInconsistency(this.store);
    if (wrong !== undefined) throw new Error(`queue '${this.name}' is inconsistent: ${wrong}`);
  }

  /** Whether the queue was closed or deleted. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Publishes to the queue through the default exchange (routing key = queue name). Resolves once
   * the storage accepted the message (many publishes in one tick share one write and one promise).
   * Rejects with `QueueFullError` (`MQLITE_QUEUE_FULL`) when `x-overflow` refuses it.
   */
  publish(body: PublishBody, properties?: MessageProperties): Promise<void> {
    try {
      this.#assertOpen();
      // A store that encodes the message within `add` and keeps nothing needs no copy of the
      // body; the few paths that keep the message after all take their own (`ownBody`).
      const borrow = !this.store.retainsMessages;
      const ownership = borrow ? 'borrow' : 'copy';
      const message = normalizeMessage(body, properties, '', this.name, undefined, ownership);
      if (this.#strict) checkGeoHeaders(message.properties.headers);
      return this.#accept(message, borrow);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Enqueues a message already normalized (by a router, or a dead-lettered copy). Resolves as
   * `publish` does. `enqueued` is called once the queue holds the message, before any consumer
   * receives it (not when the queue refuses it).
   */
  publishMessage(message: StoredMessage, enqueued?: () => void): Promise<void> {
    try {
      this.#assertOpen();
      return this.#accept(message, false, enqueued);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Starts a consumer: with a callback it is called per message (acked when it returns, requeued
   * when it throws, unless `manualAck`); without one the subscription is an async iterator.
   * Consumer argument `x-priority` (an integer, default 0): higher-priority consumers are served
   * first while they have prefetch room.
   *
   * @throws AccessRefusedError (403) when an exclusive consumer holds the queue, or an exclusive
   *   consumer is asked for while others exist; PreconditionFailedError (406) for an exclusive
   *   consumer on a single-active-consumer queue, a reused tag or a bad `x-priority`.
   */
  subscribe(callback: ConsumerCallback): Promise<Subscription<number>>;
  subscribe(params?: SubscribeParams, callback?: ConsumerCallback): Promise<Subscription<number>>;
  subscribe(
    params: SubscribeParams | ConsumerCallback = {},
    callback?: ConsumerCallback,
  ): Promise<Subscription<number>> {
    try {
      if (typeof params === 'function') return Promise.resolve(this.#subscribe({}, params));
      return Promise.resolve(this.#subscribe(params, callback));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Takes one message if one is ready (basic.get), or resolves null. With `noAck: false` (the
   * default is true, as in `@cloudamqp/amqp-client`) the message must be acked or rejected.
   */
  get(options: { noAck?: boolean } = {}): Promise<Message | null> {
    try {
      this.#assertOpen();
      this.#touch();
      this.#endRequeueRun();
      this.#ttl.expireDue();
      const handle = this.store.shift();
      if (handle === NO_HANDLE) return Promise.resolve(null);
      const noAck = options.noAck !== false;
      const channel = noAck
        ? (this.#getNoAckChannel ??= this.#channel(true))
        : (this.#getChannel ??= this.#channel(false));
      const message = this.#deliver(channel, handle, true);
      message.messageCount = this.store.readyCount;
      return Promise.resolve(message);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Waits for one message, acks it and resolves with it. Rejects with `TimeoutError` when
   * `timeout` ms (on the queue's clock) pass first, `AbortedError` when `signal` aborts, or
   * `ClosedError` if the queue goes away. Messages that arrive later stay in the queue. A wait
   * with a timeout keeps the process alive until it settles.
   */
  consumeOne(options: { timeout?: number; signal?: AbortSignal } = {}): Promise<Message> {
    return waitForOne(this.name, this.clock, this.#subscribeOne, options);
  }

  readonly #subscribeOne = (callback: ConsumerCallback): Subscription<number> =>
    this.#subscribe({ prefetch: 1, manualAck: true }, callback);

  /** Deletes every ready message (unacknowledged ones stay) and returns how many went. */
  purge(): Promise<number> {
    try {
      this.#assertOpen();
      const purged = this.store.purge();
      this.#ttl.clear();
      return this.store.sync().then(() => purged);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Deletes the queue with its messages (nothing is dead-lettered); consumers are cancelled, and
   * settling their unacked deliveries afterwards does nothing. Returns how many ready messages it
   * held (unacknowledged ones not counted, as RabbitMQ's delete-ok).
   */
  async delete(): Promise<number> {
    this.#assertOpen();
    const count = this.store.readyCount;
    await this.#shutdown(true);
    await releaseQueueStorage(this.#storage, this.#namespace, this.#ownsStorage, 'delete');
    this.#onDelete?.(this.name);
    return count;
  }

  /**
   * Closes the queue: consumers are cancelled and everything is flushed to the storage. With
   * persistent storage, unacknowledged messages are ready again (redelivered) after a reopen.
   * Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#shutdown();
    await releaseQueueStorage(this.#storage, this.#namespace, this.#ownsStorage, 'close');
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * A browser started (a consumer that reads without acquiring): like any consumer it keeps the
   * queue from expiring, as in Qpid, but it is not counted in `consumerCount`.
   */
  protected browserOpened(): void {
    this.#browsers++;
    this.#expires.stop();
  }

  /** A browser ended: with no consumers left, the `x-expires` countdown starts. */
  protected browserClosed(): void {
    this.#browsers--;
    this.#touch();
  }

  /** Marks the queue as used (a redeclare), restarting its `x-expires` countdown. */
  touch(): void {
    this.#assertOpen();
    this.#touch();
  }

  /** The limits in force: the declared arguments unless `applyLimits` replaced them. */
  get limits(): ClassicArguments {
    return this.#limits;
  }

  /**
   * Replaces the limits in force while the queue runs (the Broker resolves a policy and the
   * declared arguments into them). A lower length limit drops the head at once when the overflow
   * in force until now is `drop-head` (RabbitMQ 3.10 applies a new length limit before a new
   * overflow mode); a new `x-message-ttl` applies to messages published from now on; a changed
   * `x-expires` restarts its countdown. `maxPriority` and `singleActiveConsumer` are read from the
   * declared arguments only. Resolves once what it dropped is stored; a closed queue ignores it.
   */
  applyLimits(limits: ClassicArguments): Promise<void> {
    const before = this.#limits;
    if (this.#closed || classicArgumentsDiff(before, limits) === undefined)
      return Promise.resolve();
    this.#limits = limits;
    this.#ttl.setQueueTtl(this.#limits.messageTtl);
    if (before.expires !== this.#limits.expires) {
      this.#expires.stop();
      this.#touch();
    }
    if (before.overflow === 'drop-head' && hasLengthLimit(this.#limits)) this.#dropHeads();
    this.#gate?.added(limits, this.store, this.#deadLetters.held);
    this.#gate?.removed(limits, this.store, this.#deadLetters.held);
    return this.store.sync();
  }

  // ------------------------------------------------------------------------------------------
  // Publishing

  /**
   * Enqueues a message on an open queue, now or once its level's store is open. `borrowed`: its
   * body is the publisher's (see `publish`), so a message that has to wait gets its own.
   */
  #accept(message: StoredMessage, borrowed = false, enqueued?: () => void): Promise<void> {
    const prepared = this.store.prepare(message);
    const pending = this.#pendingEnqueue;
    if (prepared === undefined && pending === undefined) {
      return this.#enqueue(message, borrowed, enqueued);
    }
    if (borrowed) message = ownBody(message);
    // Publishes behind one that waits for its level to open wait too: arrival order holds.
    const before =
      prepared !== undefined && pending !== undefined
        ? Promise.all([prepared, pending])
        : (prepared ?? pending)!;
    let stored: Promise<void> = Promise.resolve();
    const waited = before.then(() => {
      // The queue may have closed meanwhile.
      this.#assertOpen();
      stored = this.#enqueue(message, false, enqueued);
    });
    this.#pendingEnqueue = waited;
    const clear = () => {
      if (this.#pendingEnqueue === waited) this.#pendingEnqueue = undefined;
    };
    waited.then(clear, clear);
    return waited.then(() => stored);
  }

  #enqueue(message: StoredMessage, borrowed = false, enqueued?: () => void): Promise<void> {
    // A requeue just before, in the same turn (a server reads the nack and this publish from one
    // chunk), is done first, as a microtask later: the publish finds the queue as it left it.
    this.#endRequeueRun();
    const store = this.store;
    const args = this.#limits;
    // Dead letters not yet confirmed count as RabbitMQ's quorum queues count them.
    const held = this.#deadLetters.held;
    if (args.overflow !== 'drop-head') {
      const reason = this.#gate
        ? this.#gate.refusing
        : overLengthLimit(args, store, 1 + held.count, message.body.length + held.bytes);
      if (reason !== undefined) {
        const dlx = args.overflow === 'reject-publish-dlx';
        if (dropChannel.hasSubscribers) this.#deadLetters.reportDrop(message, 'overflow', dlx);
        if (dlx) {
          void this.#deadLetters.send(borrowed ? ownBody(message) : message, reason);
          runDeadLetterHops();
        }
        return Promise.reject(
          new QueueFullError(
            `queue '${this.name}' is full (${reason === 'maxlen' ? 'x-max-length' : 'x-max-length-bytes'}); message refused`,
          ),
        );
      }
    }
    const ttl = this.#ttl.of(message);
    const now = ttl === Number.POSITIVE_INFINITY ? this.#tickTime.now() : this.clock.now();
    const handle = store.add(message, now);
    enqueued?.();
    // Nothing else ready: it goes to a consumer with room at once, even while requeued messages
    // wait for their macrotask (none is ready now), as RabbitMQ hands an empty queue's arrival
    // straight to a consumer, before any length limit applies.
    if (this.#consumers.length > 0) this.#dispatch(store.readyCount === 1);
    // The length limit applies before the TTL: a message expiring at once still pushes the head
    // out of a full queue (or is dropped itself by a limit nothing fits in).
    if (args.overflow === 'drop-head' && hasLengthLimit(args)) this.#dropHeads();
    this.#gate?.added(args, store, held);
    // Index the expiry only if nobody took it: delivered messages are re-indexed on requeue.
    if (ttl !== Number.POSITIVE_INFINITY && store.isReady(handle)) {
      if (ttl === 0) this.#expire(handle);
      else this.#ttl.index(now + ttl, handle);
    }
    return store.sync();
  }

  /**
   * The end of a run of requeues (a multiple nack, a closing consumer): drop-head drops once
   * every message returned together is back, then those of them still here that expired go, as
   * RabbitMQ applies the length limit before the TTL. Runs in a microtask, or sooner when a
   * `get` or a publish comes first.
   */
  readonly #endRequeueRun = (): void => {
    const run = this.#requeueRun;
    if (run.length === 0) return;
    const handles = run.splice(0);
    if (this.#closed) return;
    // What the limits dead-letter goes once the requeued messages went to consumers with room.
    if (this.#dispatchDeferred) this.#deadLetters.hold();
    this.#dropHeads();
    for (const handle of handles) if (this.store.isReady(handle)) this.#ttl.requeued(handle);
  };

  /** `#endRequeueRun` from a microtask, where nobody awaits what it throws. */
  readonly #endRequeueRunSoon = (): void => {
    try {
      this.#endRequeueRun();
    } catch (error) {
      this.reportError(error, 'dispatch');
    }
  };

  /** drop-head: removes (and dead-letters) messages in delivery order until within limits. */
  #dropHeads(): void {
    for (;;) {
      const reason = overLengthLimit(this.#limits, this.store, 0, 0);
      if (reason === undefined) return;
      const handle = this.store.peek();
      if (handle === NO_HANDLE) return;
      this.#dropOut(handle, reason, false);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Consumers and dispatch

  #subscribe(
    params: SubscribeParams,
    callback: ConsumerCallback | undefined,
  ): Subscription<number> {
    this.#assertOpen();
    const priority = admitConsumer(params, callback, {
      name: this.name,
      vhost: this.#vhost,
      strict: this.#strict,
      singleActiveConsumer: this.arguments.singleActiveConsumer,
      exclusive: this.#exclusive,
      consumers: this.#consumers,
    });
    const consumer = new Subscription<number>(this.#host, this.name, params, callback);
    this.#consumers.push(consumer);
    this.#rotation.add(consumer, priority);
    if (consumer.exclusive) this.#exclusive = true;
    this.#expires.stop();
    this.#dispatch();
    return consumer;
  }

  #removeConsumer(consumer: Subscription<number>): void {
    const i = this.#consumers.indexOf(consumer);
    if (i < 0) return;
    this.#consumers.splice(i, 1);
    this.#rotation.remove(consumer);
    if (consumer.exclusive) this.#exclusive = false;
    if (!this.#inUse()) this.#expires.restart(this.#limits.expires);
    if (i === 0 && this.arguments.singleActiveConsumer) this.#handover.left(consumer);
  }

  /** The consumer the next message goes to, or undefined when none has room. */
  #pickConsumer(): Subscription<number> | undefined {
    if (this.arguments.singleActiveConsumer) {
      if (this.#handover.waiting) return undefined;
      const active = this.#consumers[0];
      return active !== undefined && active.capacity > 0 ? active : undefined;
    }
    return this.#rotation.next();
  }

  /**
   * Delivers ready messages while some consumer has room. Re-entrant calls fold into the loop.
   * `arrival`: the only ready message just arrived, so no requeue's deferral holds it back.
   */
  #dispatch(arrival = false): void {
    if (this.#dispatching || (this.#dispatchDeferred && !arrival) || this.#closed) return;
    this.#dispatching = true;
    try {
      if (this.#ttl.pending) this.#ttl.expireDue();
      const store = this.store;
      // The arrival goes out alone: what a delivery requeues waits for the deferral.
      for (let first = arrival; store.readyCount > 0 && (first || !this.#dispatchDeferred); ) {
        const consumer = this.#pickConsumer();
        if (consumer === undefined) break;
        this.#deliver(consumer, store.shift());
        first = false;
      }
    } finally {
      this.#dispatching = false;
    }
  }

  /** `pulled`: by `get`, whose deliveries always carry `x-delivery-count`, as RabbitMQ's do. */
  #deliver(consumer: Subscription<number>, handle: number, pulled = false): Message {
    const store = this.store;
    const stored = store.message(handle);
    let earlier = 0;
    if (this.#deliveries.size > 0) earlier = this.#deliveries.get(handle) ?? 0;
    if (earlier === 0 && store.deliveredBeforeOpen(handle)) {
      earlier = 1;
      this.#deliveries.set(handle, 1);
    }
    // A no-ack delivery is settled as it goes out.
    if (consumer.noAck) this.#settle(handle);
    if (earlier === 0 && !pulled && !this.#countAlways) {
      return consumer.deliver(handle, stored, false);
    }
    return consumer.deliver(handle, stored, earlier > 0, DELIVERY_COUNT, earlier);
  }

  /** A subscription that is never registered as a consumer: the channel `get` delivers on. */
  #channel(noAck: boolean): Subscription<number> {
    return new Subscription<number>(this.#host, this.name, { noAck, manualAck: true }, () => {});
  }

  // ------------------------------------------------------------------------------------------
  // Settlement

  #settle(handle: number): void {
    if (this.#closed) return;
    this.store.settle(handle);
    if (this.#deliveries.size > 0) this.#deliveries.delete(handle);
  }

  #reject(handle: number, requeue: boolean): void {
    // The queue is gone (or closing): its deliveries are settled with it, dead-lettering nothing.
    if (this.#closed) return;
    if (!requeue) {
      this.#deadLetterRejected(handle);
      return;
    }
    const deliveries = (this.#deliveries.get(handle) ?? 0) + 1;
    const limit = this.#limits.deliveryLimit;
    if (limit !== undefined && deliveries > limit) {
      this.#dropOut(handle, 'delivery_limit', true);
      return;
    }
    if (this.#limits.requeueToBack === true) {
      this.#requeued(this.#readdAtBack(handle), deliveries);
    } else if (this.store.requeue(handle)) {
      this.#requeued(handle, deliveries);
    } else {
      this.#deliveries.delete(handle);
    }
  }

  /** A message is ready again after its `deliveries`-th delivery. */
  #requeued(handle: number, deliveries: number): void {
    this.#deliveries.set(handle, deliveries);
    // A requeued message counts against the length limit, which applies before its TTL.
    const limits = this.#limits;
    const dropsHeads = limits.overflow === 'drop-head' && hasLengthLimit(limits);
    if (dropsHeads && this.#classicLimits) {
      if (this.#requeueRun.push(handle) === 1) queueMicrotask(this.#endRequeueRunSoon);
    } else {
      this.#ttl.requeued(handle);
      if (dropsHeads) this.#dropAfterDispatch = true;
    }
    this.#deferDispatch();
  }

  /**
   * Returns an in-flight message to the back of the queue, with its arrival time: stored anew
   * before its old record goes, so a crash in between keeps it (redelivered), never loses it.
   */
  #readdAtBack(handle: number): number {
    const store = this.store;
    const back = store.add(store.message(handle), store.timestamp(handle));
    this.#settle(handle);
    return back;
  }

  /** Requeued messages go out on the next macrotask, so a consumer that always requeues
   * cannot starve the event loop. */
  #deferDispatch(): void {
    if (this.#dispatchDeferred || this.#closed) return;
    this.#dispatchDeferred = true;
    setImmediate(() => {
      this.#dispatchDeferred = false;
      try {
        this.#dispatch();
        // Requeued messages no consumer took may leave the queue past a limit.
        if (!this.#closed) this.#gate?.added(this.#limits, this.store, this.#deadLetters.held);
        if (this.#dropAfterDispatch && !this.#closed) {
          this.#dropAfterDispatch = false;
          this.#dropHeads();
        }
      } catch (error) {
        this.reportError(error, 'dispatch');
      } finally {
        this.#deadLetters.release();
      }
    });
  }

  /** Removes a ready message and forgets its delivery count. */
  #removeReady(handle: number): void {
    this.store.remove(handle);
    if (this.#deliveries.size > 0) this.#deliveries.delete(handle);
  }

  /** The queue discards a message by a rule of its own: say so, and dead-letter it. */
  #dropOut(handle: number, reason: DeathReason & DropReason, inFlight: boolean): void {
    if (dropChannel.hasSubscribers) {
      this.#deadLetters.reportDrop(this.store.message(handle), reason, true);
    }
    this.#deadLetterOut(handle, reason, inFlight);
  }

  /**
   * Dead-letters a rejected delivery at the end of this synchronous run of rejects (a multiple
   * nack): a priority queue sends them highest priority first, as RabbitMQ's does. The record is
   * settled now and deleted once its copy is stored, as in `#deadLetterOut`.
   */
  #deadLetterRejected(handle: number): void {
    const maxPriority = this.arguments.maxPriority;
    if (maxPriority === undefined || this.#limits.deadLetterExchange === undefined) {
      this.#deadLetterOut(handle, 'rejected', true);
      return;
    }
    const store = this.store;
    store.deletionsAfter = this.#deadLetters.sendRejected(store.message(handle), maxPriority);
    try {
      this.#settle(handle);
    } finally {
      store.deletionsAfter = undefined;
    }
  }

  /**
   * Dead-letters a stored message and settles (`inFlight`) or removes it. Its record is deleted
   * once the dead-letter copy is stored (`at-least-once`: once every target queue stored it,
   * however many attempts that takes): a crash in between keeps it here rather than lose it.
   * The copy's hop runs only once this queue is done with the message: a loop of queues that
   * brings a dead letter back here finds it gone, not still ready.
   */
  #deadLetterOut(handle: number, reason: DeathReason, inFlight: boolean): void {
    const store = this.store;
    const message = store.message(handle);
    const held = atLeastOnce(this.#limits);
    const sent = held
      ? this.#deadLetters.sendConfirmed(message, reason)
      : this.#deadLetters.send(message, reason);
    store.deletionsAfter = sent;
    try {
      if (inFlight) this.#settle(handle);
      else this.#removeReady(handle);
    } finally {
      store.deletionsAfter = undefined;
    }
    const gate = this.#gate;
    if (held && sent && gate) {
      // An unconfirmed dead letter counts against the limits until its target stored it.
      gate.added(this.#limits, store, this.#deadLetters.held);
      void sent.then(() => gate.removed(this.#limits, store, this.#deadLetters.held));
    }
    runDeadLetterHops();
  }

  /** Reports an error nobody awaits through `onError` and `mqlite:error`. */
  protected reportError(error: unknown, source: ErrorSource, consumerTag?: string): void {
    reportError(this.#onError, error, source, this.name, consumerTag);
  }

  /** A ready message's TTL ran out. */
  #expire(handle: number): void {
    this.#dropOut(handle, 'expired', false);
  }

  // ------------------------------------------------------------------------------------------
  // Queue expiry (x-expires)

  /** Some consumer or browser is attached: `x-expires` does not run. */
  #inUse(): boolean {
    return this.#consumers.length > 0 || this.#browsers > 0;
  }

  /** Restarts the `x-expires` countdown unless the queue is in use. */
  #touch(): void {
    if (!this.#inUse()) this.#expires.restart(this.#limits.expires);
  }

  /** The `x-expires` countdown ran out. */
  #expired(): void {
    if (this.#closed || this.#inUse()) return;
    this.delete().catch((error: unknown) => this.reportError(error, 'queue-delete'));
  }

  // ------------------------------------------------------------------------------------------
  // Lifecycle

  /** After a reopen: expires or indexes the recovered messages and starts `x-expires`. */
  #recover(): void {
    this.#ttl.recover();
    this.#expires.restart(this.#limits.expires);
  }

  async #shutdown(deleted = false): Promise<void> {
    this.#closed = true;
    this.#deadLetters.close();
    this.#expires.close();
    this.#ttl.close();
    for (const consumer of [...this.#consumers]) await consumer.detach(deleted);
    await this.#getChannel?.detach(deleted);
    await this.#getNoAckChannel?.detach(deleted);
    await this.store.close();
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClosedError(`queue '${this.name}' is closed`);
  }
}
