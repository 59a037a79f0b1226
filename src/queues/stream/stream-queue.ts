import type { Clock } from '../../clock.js';
import {
  type ErrorHandler,
  type ErrorSource,
  reportError,
  retentionChannel,
} from '../../diagnostics.js';
import { ClosedError, NotImplementedError, OffsetClampedError } from '../../errors.js';
import { checkGeoHeaders } from '../../filters/index.js';
import { normalizeMessage } from '../../message/normalize.js';
import type { MessageProperties, PublishBody, StoredMessage } from '../../message/types.js';
import type { Log, Namespace, StorageAdapter } from '../../storage/types.js';
import type { ConsumerCallback, SubscribeParams, Subscription } from '../consumer.js';
import { releaseQueueStorage } from '../release-storage.js';
import { type StreamArguments, streamArgumentsDiff } from './arguments.js';
import { type AdmittingStream, admitStreamConsumer } from './consumer-admission.js';
import { IndexedConsumers } from './indexed-consumers.js';
import { parseOffsetSpec, resolveOffsetSpec } from './offset-spec.js';
import { type ReadOptions, StreamReader } from './reader.js';
import { StreamRetention } from './retention.js';
import { StreamConsumer, type StreamConsumerContext } from './stream-consumer.js';
import { openStreamStorage, type StreamInit, type StreamQueueOptions } from './stream-options.js';
import { FilterSummaries } from './summaries.js';
import { OffsetStore } from './tracking.js';

export type { StreamQueueOptions } from './stream-options.js';

/**
 * A stream: an append-only log that any number of consumers read independently, each from its
 * own offset. Consuming removes nothing; retention drops whole segments from the head.
 *
 * ```ts
 * const stream = await StreamQueue.open({ name: 'events', arguments: { 'x-max-age': '7D' } });
 * await stream.publish({ hello: 'world' });
 * await stream.subscribe({ tag: 'audit', args: { 'x-stream-offset': 'first' } }, (msg) => {
 *   console.log(msg.properties.headers?.['x-stream-offset'], msg.json());
 * });
 * ```
 *
 * Offset tracking: a consumer with a tag of its own and no `x-stream-offset` (or with
 * `x-stream-automatic-offset-tracking: true`) resumes where it left off. The stored offset is
 * that of the first message the consumer has not acknowledged, so a crash never skips a
 * delivered but unacknowledged message (LavinMQ stores its read position instead).
 *
 * Arrival times (for `x-max-age` and seeking by time) are read from the clock once per tick:
 * messages published in one synchronous batch share one.
 */
export class StreamQueue implements AsyncDisposable {
  /** Queue name. */
  readonly name: string;
  /** The stream's validated arguments. */
  readonly arguments: StreamArguments;

  readonly #storage: StorageAdapter;
  /** The log keeps nothing of an appended message: it encodes it or packs it. */
  readonly #keepsNothing: boolean;
  readonly #ownsStorage: boolean;
  readonly #namespace: Namespace;
  readonly #log: Log<StoredMessage>;
  readonly #clock: Clock;
  readonly #onDelete: ((name: string) => void) | undefined;
  readonly #onError: ErrorHandler;
  readonly #offsets: OffsetStore;
  readonly #retention: StreamRetention;
  readonly #consumers = new Map<string, StreamConsumer>();
  /** Consumers and readers waiting at the end of the log for the next publish. */
  #waiting = new Set<{ wake(): void }>();
  #spareWaiting = new Set<{ wake(): void }>();
  readonly #indexedConsumers: IndexedConsumers;
  readonly #summaries: FilterSummaries;
  /** When the log's bytes reach this, its active segment filled: run retention. */
  #rollCheckBytes = 0;
  #tickScheduled = false;
  #tickTime = 0;
  #closed = false;
  readonly #context: StreamConsumerContext;
  readonly #admitting: AdmittingStream;

  private constructor(init: StreamInit) {
    const { log, clock, namespace } = init;
    this.name = init.name;
    this.arguments = init.arguments;
    this.#storage = init.storage;
    this.#keepsNothing = init.storage.supports.persistent || init.storage.supports.packing;
    this.#ownsStorage = init.ownsStorage;
    this.#namespace = namespace;
    this.#log = log;
    this.#clock = clock;
    this.#onDelete = init.onDelete;
    this.#onError = init.onError;
    this.#offsets = new OffsetStore(namespace.meta, log.nextOffset);
    this.#summaries = new FilterSummaries(namespace.meta, log.firstOffset, log.nextOffset);
    this.#indexedConsumers = new IndexedConsumers(log.nextOffset);
    this.#retention = new StreamRetention(
      log,
      init.arguments,
      clock,
      (dropped) => this.#afterDrop(dropped, 'retention'),
      (error) => this.#reportError(error, 'retention'),
    );
    this.#context = {
      log,
      offsets: this.#offsets,
      park: (consumer) => this.#park(consumer),
      unpark: (consumer) => this.#waiting.delete(consumer),
      detach: (consumer) => this.#detach(consumer),
      scanned: () => this.#indexedConsumers.scanned,
      closed: () => this.#closed,
      summaries: this.#summaries,
      reportError: (error, source, consumerTag) => this.#reportError(error, source, consumerTag),
    };
    this.#admitting = {
      name: init.name,
      vhost: init.vhost,
      strict: init.strict,
      log,
      offsets: this.#offsets,
      consumers: this.#consumers,
    };
  }

  /**
   * Opens (or creates) a stream. A stream that exists in the storage keeps its messages, offsets,
   * stored consumer offsets and arguments; declaring it again with other arguments fails with
   * 406 "inequivalent arg". Open a stream once per storage namespace (the Broker does): two
   * handles on one stream would not wake each other's consumers.
   *
   * @throws PreconditionFailedError (406) for a refused flag or argument.
   */
  static async open(options: StreamQueueOptions): Promise<StreamQueue> {
    const queue = new StreamQueue(await openStreamStorage(options));
    for (const { tag, stored, clamped } of queue.#offsets.clampTo(queue.#log.nextOffset)) {
      queue.#reportError(new OffsetClampedError(queue.name, tag, stored, clamped), 'storage', tag);
    }
    queue.#runRetention();
    queue.#resummarize();
    return queue;
  }

  /** True once the stream was closed or deleted. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Messages retained. */
  get messageCount(): number {
    return this.#open().count;
  }

  /** Bytes of the retained messages. */
  get messageBytes(): number {
    return this.#open().bytes;
  }

  /** Active consumers. */
  get consumerCount(): number {
    return this.#consumers.size;
  }

  /** Offset of the oldest retained message (equals `nextOffset` when the stream is empty). */
  get firstOffset(): number {
    return this.#open().firstOffset;
  }

  /** Offset the next published message gets. */
  get nextOffset(): number {
    return this.#open().nextOffset;
  }

  /**
   * Appends a message to the default exchange with the stream's name as routing key. Resolves
   * once the storage accepted it (under the fs adapter: per its fsync policy); many publishes in
   * one tick share one write and one promise.
   */
  publish(body: PublishBody, properties?: MessageProperties): Promise<void> {
    let message: StoredMessage;
    try {
      this.#open();
      // The log encodes or packs the message within `append` and keeps nothing: the body needs no
      // copy of its own unless indexed consumers are handed the message itself after this tick.
      const ownership = this.#keepsNothing && this.#indexedConsumers.size === 0 ? 'borrow' : 'copy';
      message = normalizeMessage(body, properties, '', this.name, undefined, ownership);
      if (this.#admitting.strict) checkGeoHeaders(message.properties.headers);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.publishMessage(message);
  }

  /**
   * Appends a message already normalized (by a router that delivers one message to several
   * queues). Resolves as `publish` does. `enqueued` is called once the stream holds the message,
   * before any consumer receives it.
   */
  publishMessage(message: StoredMessage, enqueued?: () => void): Promise<void> {
    const log = this.#log;
    try {
      this.#open();
      if (!this.#tickScheduled) {
        this.#tickScheduled = true;
        // Arrival times are read once per tick: every message of a synchronous batch shares it.
        this.#tickTime = this.#clock.now();
        queueMicrotask(this.#afterPublish);
      }
      const offset = log.append(message, this.#tickTime);
      const headers = message.properties.headers;
      this.#summaries.add(offset, headers);
      if (headers !== undefined) this.#indexedConsumers.published(offset, message);
      enqueued?.();
    } catch (error) {
      return Promise.reject(error);
    }
    return log.sync();
  }

  /**
   * Starts a consumer. Stream consumers must acknowledge: `noAck`, `prefetch: 0`, `exclusive`
   * and a consumer `x-priority` fail with 406. Without `prefetch` a window of
   * 1000 messages (`DEFAULT_STREAM_PREFETCH`) applies. Consumer arguments:
   * - `x-stream-offset`: where to start (`'first'`, `'last'`, `'next'`, an offset, a negative
   *   count of last messages, or a `Date`);
   * - `x-stream-automatic-offset-tracking`: with an explicit offset, resume from the stored
   *   offset when there is one and keep storing progress;
   * - `x-stream-filter`, `x-filter-match-type`, `x-stream-match-unfiltered`: filters.
   *
   * An empty tag becomes `amq.ctag-<random>`; such consumers never store offsets.
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
   * Replays the stream from `from` (any `x-stream-offset` value; default `'first'`), tracking and
   * acknowledging nothing. Ends at the end of the stream unless `follow` is set. Iterate it with
   * `for await`, or with a plain `for...of` for what is stored now, without a promise a message.
   */
  read(from: unknown = 'first', options: ReadOptions = {}): StreamReader {
    const log = this.#open();
    const start = resolveOffsetSpec(parseOffsetSpec(from), log);
    return new StreamReader(log.cursor(start), this.#tailWaiters, options);
  }

  /** Streams have no pull: fails with 540 NOT_IMPLEMENTED, as brokers answer basic.get. */
  get(_options?: { noAck?: boolean }): Promise<never> {
    return Promise.reject(
      new NotImplementedError(`basic.get is not supported on stream queue '${this.name}'`),
    );
  }

  /**
   * Pulls are not supported on streams: fails with 540 NOT_IMPLEMENTED, as `get()`. Subscribe
   * with `x-stream-offset`, or `read()`, instead.
   */
  consumeOne(_options?: { timeout?: number; signal?: AbortSignal }): Promise<never> {
    return this.get();
  }

  /** The offset stored for a consumer tag (where it resumes), or undefined. */
  storedOffset(tag: string): number | undefined {
    this.#open();
    return this.#offsets.get(tag);
  }

  /**
   * Drops every segment but the active one (the one being written) and returns how many
   * messages went. Consumers positioned in them continue from the oldest retained message.
   */
  purge(): Promise<number> {
    try {
      const log = this.#open();
      const segments = log.segments();
      const dropped = log.dropBefore(segments[segments.length - 1]!.firstOffset);
      this.#afterDrop(dropped, 'purge');
      return Promise.resolve(dropped);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Deletes the stream with its messages and stored offsets; its consumers are cancelled.
   * Returns how many messages it held.
   */
  async delete(): Promise<number> {
    const count = this.#open().count;
    await this.#shutdown();
    await releaseQueueStorage(this.#storage, this.#namespace, this.#ownsStorage, 'delete');
    this.#onDelete?.(this.name);
    return count;
  }

  /**
   * Closes the stream: consumers are closed, waiting readers finish, and everything is flushed
   * to the storage. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#shutdown();
    // Offsets held for the messages before them are stored once those are durable.
    const end = this.#log.nextOffset;
    await this.#log.sync().then(() => this.#offsets.advance(end), ignore);
    await releaseQueueStorage(this.#storage, this.#namespace, this.#ownsStorage, 'close');
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #subscribe(params: SubscribeParams, callback: ConsumerCallback | undefined) {
    this.#open();
    const admitted = admitStreamConsumer(params, this.#admitting);
    const consumer = new StreamConsumer(
      this.#context,
      this.name,
      admitted.params,
      admitted.options,
      callback,
    );
    this.#consumers.set(admitted.params.tag, consumer);
    if (consumer.indexed) this.#indexedConsumers.add(consumer);
    consumer.start();
    return consumer.subscription;
  }

  /** Once per tick with publishes: retention if a segment filled, then wake the waiting. */
  readonly #afterPublish = (): void => {
    this.#tickScheduled = false;
    if (this.#closed) return;
    // Stored offsets may pass the tick's messages once they are durable, not before.
    const end = this.#log.nextOffset;
    this.#log.sync().then(() => this.#offsets.advance(end), ignore);
    if (this.#log.bytes >= this.#rollCheckBytes) {
      try {
        this.#runRetention();
      } catch (error) {
        this.#reportError(error, 'retention');
      }
    }
    this.#indexedConsumers.wake(this.#log.nextOffset);
    if (this.#waiting.size === 0) return;
    // Swap sets: a woken waiter that reaches the end again parks in the fresh one.
    const waiting = this.#waiting;
    this.#waiting = this.#spareWaiting;
    this.#spareWaiting = waiting;
    for (const waiter of waiting) waiter.wake();
    waiting.clear();
  };

  /** Summarizes the messages of the block that was still open when the stream last closed. */
  #resummarize(): void {
    const log = this.#log;
    const cursor = log.cursor(this.#summaries.next);
    while (cursor.next()) this.#summaries.add(cursor.offset, cursor.record.properties.headers);
  }

  #park(consumer: StreamConsumer): void {
    if (!consumer.indexed) this.#waiting.add(consumer);
  }

  #detach(consumer: StreamConsumer): void {
    this.#waiting.delete(consumer);
    this.#indexedConsumers.remove(consumer);
    if (this.#consumers.get(consumer.tag) === consumer) this.#consumers.delete(consumer.tag);
  }

  readonly #tailWaiters = {
    closed: () => this.#closed,
    park: (waiter: { wake(): void }) => {
      this.#waiting.add(waiter);
    },
    unpark: (waiter: { wake(): void }) => {
      this.#waiting.delete(waiter);
    },
  };

  /** The retention limits in force: the declared arguments unless `applyLimits` replaced them. */
  get limits(): StreamArguments {
    return this.#retention.limits;
  }

  /**
   * Replaces the retention limits in force while the stream runs (the Broker resolves a policy
   * and the declared arguments into them) and runs retention at once, as LavinMQ applies a
   * `max-age` or `max-length-bytes` policy. The segment size stays as declared. A closed stream
   * ignores it.
   */
  applyLimits(limits: StreamArguments): void {
    if (this.#closed || streamArgumentsDiff(this.#retention.limits, limits) === undefined) return;
    this.#retention.setLimits(limits);
    this.#updateRollCheck();
  }

  #runRetention(): void {
    this.#retention.run();
    this.#updateRollCheck();
  }

  /** Segments were dropped: forget stored offsets that point before the oldest message. */
  #afterDrop(dropped: number, cause: 'retention' | 'purge'): void {
    const firstOffset = this.#log.firstOffset;
    this.#offsets.dropBefore(firstOffset);
    this.#summaries.dropBefore(firstOffset);
    this.#updateRollCheck();
    if (dropped > 0 && retentionChannel.hasSubscribers) {
      retentionChannel.publish({ queue: this.name, cause, messages: dropped, firstOffset });
    }
  }

  #reportError(error: unknown, source: ErrorSource, consumerTag?: string): void {
    reportError(this.#onError, error, source, this.name, consumerTag);
  }

  #updateRollCheck(): void {
    const segments = this.#log.segments();
    const active = segments[segments.length - 1]!;
    // The active segment rolls over once it would exceed segmentBytes: by then the log grew past
    // the bytes of the older segments plus a full segment.
    this.#rollCheckBytes = this.#log.bytes - active.bytes + this.arguments.segmentBytes + 1;
  }

  async #shutdown(): Promise<void> {
    this.#closed = true;
    this.#retention.close();
    for (const consumer of [...this.#consumers.values()]) await consumer.subscription.close();
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    this.#indexedConsumers.clear();
    // Waiting readers wake to a closed stream and finish with ClosedError.
    for (const waiter of waiting) waiter.wake();
  }

  #open(): Log<StoredMessage> {
    if (this.#closed) throw new ClosedError(`stream queue '${this.name}' is closed`);
    return this.#log;
  }
}

function ignore(): void {}
