import { randomFillSync } from 'node:crypto';
import { ClosedError, PreconditionFailedError } from '../errors.js';
import { Message, type Settlement } from '../message/message.js';
import type { FieldTable, FieldValue, StoredMessage } from '../message/types.js';
import { DeliveryWindow } from './delivery-window.js';
import { refuseUnknownKeys } from './unknown-names.js';

/** Parameters of `queue.subscribe()`, as `@cloudamqp/amqp-client` spells them. */
export interface SubscribeParams {
  /** Consumer tag; empty or absent → `amq.ctag-<random>`. */
  tag?: string;
  /** Deliveries count as acked when sent (no redelivery). Default false with a callback. */
  noAck?: boolean;
  /** Refuse other consumers on the queue while this one exists. */
  exclusive?: boolean;
  /** Consumer arguments (`x-priority`, stream `x-stream-offset`, filters, ...). */
  args?: FieldTable;
  /** Most unacked deliveries at once; 0 or absent = unlimited. */
  prefetch?: number;
  /** The callback or loop acks itself; the library never acks or nacks for it. */
  manualAck?: boolean;
  /** Requeue a message whose callback threw (default true). */
  requeueOnNack?: boolean;
  /** Start paused: nothing is delivered until `subscription.resume()`. */
  paused?: boolean;
}

const SUBSCRIBE_PARAMS: ReadonlySet<string> = new Set<keyof SubscribeParams>([
  'tag',
  'noAck',
  'exclusive',
  'args',
  'prefetch',
  'manualAck',
  'requeueOnNack',
  'paused',
]);

/**
 * Checks the shape of `subscribe()` params: an object of known keys only. An unknown key is a
 * mistake (`{ prefech: 10 }` would mean unlimited prefetch): a TypeError naming the nearest.
 */
export function checkSubscribeParams(params: unknown): asserts params is SubscribeParams {
  if (typeof params !== 'object' || params === null) {
    throw new TypeError('subscribe() params must be an object');
  }
  refuseUnknownKeys(params, SUBSCRIBE_PARAMS, 'subscribe parameter');
}

/**
 * A subscriber callback. Its returned promise is awaited before the message is acked; what it
 * throws (or rejects with) is reported to the queue's `onError`, in every ack mode.
 */
export type ConsumerCallback = (message: Message) => void | Promise<void>;

/**
 * The queue side of a subscription. Each queue kind implements it once; `E` is whatever the
 * queue needs to find a delivery again (a queue entry, a stream offset).
 *
 * Re-entrancy: `deliver()` may run a synchronous callback that acks at once, so `onAck` and
 * `onReject` can be called from inside `deliver()`. `onCapacity` never is: it is called only
 * once the subscription is outside `deliver()`.
 */
export interface ConsumerHost<E> {
  /** The consumer acked `entry`. */
  onAck(consumer: Subscription<E>, entry: E): void;
  /** The consumer rejected `entry` (nack, reject, or its channel closed with it unacked). */
  onReject(consumer: Subscription<E>, entry: E, requeue: boolean): void;
  /** The consumer may take more messages now. */
  onCapacity(consumer: Subscription<E>): void;
  /** The consumer was cancelled: deliver nothing more to it. Its unacked stay settleable. */
  onCancel(consumer: Subscription<E>): void;
  /** The consumer's callback threw or its promise rejected (after the message was settled). */
  onCallbackError(consumer: Subscription<E>, error: unknown): void;
}

const resolved = Promise.resolve();

/** How a delivery is settled: acked, requeued, or dropped (dead-lettered where configured). */
export type Outcome = 0 | 1 | 2;
export const ACK: Outcome = 0;
export const REQUEUE: Outcome = 1;
export const DROP: Outcome = 2;

/** Random bytes for 256 tags, filled at once: one `randomBytes` call a tag cost 5–7 µs. */
const tagBytes = Buffer.allocUnsafe(16 * 256);
let tagAt = tagBytes.length;

/** Makes a server-style consumer tag (16 random bytes) for subscribers that gave none. */
export function generateConsumerTag(): string {
  if (tagAt === tagBytes.length) {
    randomFillSync(tagBytes);
    tagAt = 0;
  }
  const tag = tagBytes.toString('base64url', tagAt, tagAt + 16);
  tagAt += 16;
  return `amq.ctag-${tag}`;
}

interface Waiter {
  resolve(result: IteratorResult<Message>): void;
  reject(error: unknown): void;
}

/**
 * One consumer: a subscription to a queue. It owns the delivery tags of its deliveries (as an AMQP
 * channel does), its prefetch window and its unacked entries, and runs the callback or feeds the
 * async iterator. Queue kinds deliver to it through `deliver()` while `capacity > 0`.
 *
 * - `cancel()` stops deliveries; unacked messages stay settleable (basic.cancel).
 * - `close()` is the consumer's connection going away: it cancels and returns every unacked
 *   message to the queue, in delivery order.
 * - As an async iterator (subscribe without a callback), it acks the previous message when the
 *   loop asks for the next one, unless `manualAck`/`noAck`; leaving the loop closes it, so the
 *   message in hand when the loop exits is returned to the queue unless it was acked.
 */
export class Subscription<E = unknown> implements Settlement, AsyncIterable<Message> {
  // Fields are laid out in declaration order: what a delivery and its ack read comes first, so
  // that with thousands of consumers a delivery misses the cache on as few lines as possible.
  #cancelled = false;
  /** Unsettled deliveries, `#current` included (counted here: `capacity` stays off the window). */
  #unsettled = 0;
  /** Unacked deliveries allowed at once; 0 = unlimited. */
  readonly prefetch: number;
  readonly noAck: boolean;
  #nextTag = 1;
  /** Tag of the delivery being handed over and not yet settled or moved to the window; 0: none. */
  #current = 0;
  #currentEntry: E | undefined;
  readonly #callback: ConsumerCallback | undefined;
  readonly #autoAck: boolean;
  #delivering = false;
  #capacityFreed = false;
  #closed = false;
  /** Why settling fails once closed. */
  #closedDetail = '';
  /** Its queue was deleted: settling takes the delivery and does nothing else. */
  #settlesNothing = false;
  #paused = false;
  readonly #host: ConsumerHost<E>;
  /** The consumer tag. */
  readonly consumerTag: string;
  readonly #requeueOnNack: boolean;
  /**
   * Unsettled deliveries but the newest: a synchronous callback acked on return settles its
   * delivery before any other is made, so that one waits in `#current` and reaches the window
   * only if it is still unsettled when the callback returns (see `deliver()`).
   */
  readonly #unacked = new DeliveryWindow<E>();
  /** Name of the queue it consumes from. */
  readonly queueName: string;
  readonly exclusive: boolean;
  /** Consumer arguments as given. */
  readonly args: Readonly<FieldTable>;
  /** Per-consumer state of the queue kind (a stream's cursor, for example). */
  hostState: unknown;
  // Iterator mode: messages delivered but not yet taken by the loop, and a waiting loop.
  #buffer: Message[] = [];
  #bufferHead = 0;
  #waiter: Waiter | undefined;
  #previous: Message | undefined;
  #cancelListeners: (() => void)[] = [];

  /** @internal Built by a queue's `subscribe()`. */
  constructor(
    host: ConsumerHost<E>,
    queueName: string,
    params: SubscribeParams,
    callback?: ConsumerCallback,
  ) {
    const prefetch = params.prefetch ?? 0;
    if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > 65535) {
      throw new RangeError(`prefetch must be an integer 0..65535, got ${String(params.prefetch)}`);
    }
    if (params.tag !== undefined && typeof params.tag !== 'string') {
      throw new TypeError('consumer tag must be a string');
    }
    this.#host = host;
    this.queueName = queueName;
    this.consumerTag = params.tag || generateConsumerTag();
    this.prefetch = prefetch;
    this.noAck = params.noAck === true;
    this.exclusive = params.exclusive === true;
    this.args = params.args ?? {};
    this.#callback = callback;
    this.#autoAck = !this.noAck && params.manualAck !== true;
    this.#requeueOnNack = params.requeueOnNack !== false;
    this.#paused = params.paused === true;
  }

  /** True until `cancel()` or `close()`. */
  get active(): boolean {
    return !this.#cancelled;
  }

  /** Deliveries sent and not yet settled. */
  get unackedCount(): number {
    return this.#unsettled;
  }

  /** How many more messages it may receive now (Infinity when unlimited, 0 when cancelled). */
  get capacity(): number {
    if (this.#cancelled || this.#paused) return 0;
    if (this.prefetch === 0) return Number.POSITIVE_INFINITY;
    return this.prefetch - this.#unsettled;
  }

  /**
   * Holds deliveries back until `resume()`, whatever the prefetch window allows: a network
   * consumer whose socket is not draining. Settling goes on as usual.
   */
  pause(): void {
    this.#paused = true;
  }

  /** Lets deliveries flow again after `pause()`. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#freed();
  }

  /** Registers a listener run once when the consumer is cancelled or closed. */
  onCancelled(listener: () => void): void {
    if (this.#cancelled) listener();
    else this.#cancelListeners.push(listener);
  }

  /**
   * Sends one message to the consumer. The host must only call it while `capacity > 0`. For a
   * `noAck` consumer the entry is settled on delivery: the host treats it as acked.
   * @param extraHeader a header this delivery carries beside the publisher's (e.g. `x-stream-offset`).
   */
  deliver(
    entry: E,
    stored: StoredMessage,
    redelivered: boolean,
    extraHeader?: string,
    extraValue?: FieldValue,
  ): Message {
    const tag = this.#nextTag++;
    if (!this.noAck) {
      // A delivery made from a callback: the one that callback got goes to the window first.
      if (this.#current !== 0) this.#keepCurrent();
      this.#current = tag;
      this.#currentEntry = entry;
      this.#unsettled++;
    }
    const message = new Message(
      stored,
      tag,
      this.consumerTag,
      redelivered,
      this,
      extraHeader,
      extraValue,
    );
    this.#delivering = true;
    try {
      if (this.#callback) this.#runCallback(message);
      else this.#push(message);
    } finally {
      this.#delivering = false;
      // Still unsettled once handed over (an async or manual-ack callback, an iterator).
      if (this.#current === tag) this.#keepCurrent();
    }
    if (this.#capacityFreed) {
      this.#capacityFreed = false;
      this.#host.onCapacity(this);
    }
    return message;
  }

  /** Acknowledges one delivery, or every unsettled one up to `deliveryTag` with `multiple`. */
  ack(deliveryTag: number, multiple = false): Promise<void> {
    try {
      this.#settle(deliveryTag, multiple, ACK);
    } catch (error) {
      return Promise.reject(error);
    }
    return resolved;
  }

  /**
   * Settles one delivery, or every unsettled one up to `deliveryTag` with `multiple`, at once:
   * what `ack` and `nack` do, without a promise. For the AMQP server, which settles every ack.
   * @throws what `ack` and `nack` reject with.
   * @internal
   */
  settle(deliveryTag: number, multiple: boolean, outcome: Outcome): void {
    this.#settle(deliveryTag, multiple, outcome);
  }

  /** Rejects one delivery (or every unsettled one up to it), requeueing or dropping it. */
  nack(deliveryTag: number, requeue = false, multiple = false): Promise<void> {
    try {
      this.#settle(deliveryTag, multiple, requeue ? REQUEUE : DROP);
    } catch (error) {
      return Promise.reject(error);
    }
    return resolved;
  }

  /** Stops deliveries. Unacked messages stay with the consumer and can still be settled. */
  cancel(): Promise<void> {
    if (this.#cancelled) return resolved;
    this.#cancelled = true;
    this.#host.onCancel(this);
    for (const listener of this.#cancelListeners.splice(0)) listener();
    this.#endIteration();
    return resolved;
  }

  /**
   * Cancels and returns every unacked message to the queue in delivery order, as when a
   * consumer's connection goes away. Settling them afterwards fails.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    // All in one synchronous step: a queue handing over to another consumer then finds these
    // messages back in place first.
    void this.cancel();
    this.#closed = true;
    this.#closedDetail = `consumer '${this.consumerTag}' is closed; its deliveries were requeued`;
    const entries: E[] = [];
    this.#takeUpTo(Number.POSITIVE_INFINITY, (entry) => entries.push(entry));
    for (const entry of entries) this.#host.onReject(this, entry, true);
  }

  /**
   * Its queue closed: deliveries stop and settling fails with `ClosedError`. Unacked messages
   * are left as they are stored: a persistent queue has them ready again when it reopens.
   * Its queue was deleted (`deleted`): settling its deliveries does nothing, as on RabbitMQ,
   * where the channel still knows their tags.
   */
  async detach(deleted = false): Promise<void> {
    if (this.#closed) return;
    await this.cancel();
    this.#closed = true;
    this.#settlesNothing = deleted;
    this.#closedDetail = `queue '${this.queueName}' is closed`;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Iterates the deliveries of a subscription made without a callback. */
  [Symbol.asyncIterator](): AsyncIterator<Message> {
    if (this.#callback) {
      throw new TypeError('a subscription with a callback cannot also be iterated');
    }
    return {
      next: () => this.#next(),
      return: async () => {
        await this.close();
        return { done: true, value: undefined };
      },
    };
  }

  /** Settles synchronously; throws for an unknown tag or a closed consumer. */
  #settle(deliveryTag: number, multiple: boolean, outcome: Outcome): void {
    if (this.#closed) {
      if (!this.#settlesNothing) throw new ClosedError(this.#closedDetail);
      if (multiple)
        this.#takeUpTo(deliveryTag === 0 ? Number.POSITIVE_INFINITY : deliveryTag, ignore);
      else if (this.#take(deliveryTag) === undefined) throw unknownTag(deliveryTag);
      return;
    }
    if (!multiple) {
      const entry = this.#take(deliveryTag);
      if (entry === undefined) throw unknownTag(deliveryTag);
      this.#apply(entry, outcome);
    } else {
      const limit = deliveryTag === 0 ? Number.POSITIVE_INFINITY : deliveryTag;
      const settled = this.#takeUpTo(limit, (entry) => this.#apply(entry, outcome));
      if (settled === 0 && deliveryTag !== 0) throw unknownTag(deliveryTag);
    }
    this.#freed();
  }

  /** Moves the delivery in `#current` to the window. */
  #keepCurrent(): void {
    this.#unacked.add(this.#current, this.#currentEntry as E);
    this.#current = 0;
    this.#currentEntry = undefined;
  }

  /** Removes and returns the entry of an unsettled `tag`, or undefined. */
  #take(tag: number): E | undefined {
    let entry: E | undefined;
    if (tag === this.#current && tag !== 0) {
      entry = this.#currentEntry;
      this.#current = 0;
      this.#currentEntry = undefined;
    } else {
      entry = this.#unacked.take(tag);
      if (entry === undefined) return undefined;
    }
    this.#unsettled--;
    return entry;
  }

  /** Removes every unsettled entry with a tag up to `limit`, oldest first, visiting each. */
  #takeUpTo(limit: number, visit: (entry: E) => void): number {
    // `#current` is the newest: taken out first, visited last (a visit may deliver again).
    const current =
      this.#current !== 0 && this.#current <= limit ? this.#take(this.#current) : undefined;
    let taken = this.#unacked.takeUpTo(limit, (entry) => {
      this.#unsettled--;
      visit(entry);
    });
    if (current !== undefined) {
      taken++;
      visit(current);
    }
    return taken;
  }

  #apply(entry: E, outcome: Outcome): void {
    if (outcome === ACK) this.#host.onAck(this, entry);
    else this.#host.onReject(this, entry, outcome === REQUEUE);
  }

  #freed(): void {
    if (this.#cancelled) return;
    if (this.#delivering) this.#capacityFreed = true;
    else this.#host.onCapacity(this);
  }

  #runCallback(message: Message): void {
    const callback = this.#callback!;
    let result: void | Promise<void>;
    try {
      result = callback(message);
    } catch (error) {
      this.#failed(message, error);
      return;
    }
    if (!result) {
      if (this.#autoAck) this.#autoSettle(message, ACK);
      return;
    }
    result.then(this.#autoAck ? () => this.#autoSettle(message, ACK) : ignore, (error: unknown) =>
      this.#failed(message, error),
    );
  }

  /** The callback failed: nack it as told (unless it settles itself), then report. */
  #failed(message: Message, error: unknown): void {
    if (this.#autoAck) this.#autoSettle(message, this.#requeueOnNack ? REQUEUE : DROP);
    this.#host.onCallbackError(this, error);
  }

  /** Settles on the callback's behalf, unless it settled the message itself. */
  #autoSettle(message: Message, outcome: Outcome): void {
    if (message.isAcked || this.#closed) return;
    message.markSettled();
    // The tag may already be gone (settled with `multiple` by a later message): nothing to do.
    const tag = message.deliveryTag;
    if (tag === this.#current || this.#unacked.has(tag)) this.#settle(tag, false, outcome);
  }

  #push(message: Message): void {
    const waiter = this.#waiter;
    if (waiter) {
      this.#waiter = undefined;
      this.#handOver(message);
      waiter.resolve({ done: false, value: message });
    } else {
      this.#buffer.push(message);
    }
  }

  #handOver(message: Message): void {
    this.#previous = this.#autoAck ? message : undefined;
  }

  #next(): Promise<IteratorResult<Message>> {
    const previous = this.#previous;
    this.#previous = undefined;
    if (previous) this.#autoSettle(previous, ACK);
    if (this.#bufferHead < this.#buffer.length) {
      const message = this.#buffer[this.#bufferHead]!;
      this.#buffer[this.#bufferHead++] = undefined as unknown as Message;
      if (this.#bufferHead === this.#buffer.length) {
        this.#buffer.length = 0;
        this.#bufferHead = 0;
      }
      this.#handOver(message);
      return Promise.resolve({ done: false, value: message });
    }
    if (this.#cancelled) return Promise.resolve({ done: true, value: undefined });
    return new Promise<IteratorResult<Message>>((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  #endIteration(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve({ done: true, value: undefined });
  }
}

function unknownTag(tag: number) {
  return new PreconditionFailedError(`unknown delivery tag ${tag}`);
}

function ignore(): void {}
