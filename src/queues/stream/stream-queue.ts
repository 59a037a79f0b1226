import { type Clock, systemClock } from '../../clock.js';
import {
  type ErrorHandler,
  type ErrorSource,
  reportError,
  retentionChannel,
  warnOnError,
} from '../../diagnostics.js';
import {
  ClosedError,
  type DataLossError,
  DEFAULT_VHOST,
  inequivalentArg,
  NotImplementedError,
  OffsetClampedError,
  PreconditionFailedError,
  queueResource,
} from '../../errors.js';
import {
  checkGeoHeaders,
  FILTER_ARG,
  GeoIndex,
  MATCH_TYPE_ARG,
  MATCH_UNFILTERED_ARG,
  parseStreamFilter,
  ValueIndex,
} from '../../filters/index.js';
import { messageViewCodec } from '../../message/codec.js';
import { normalizeMessage } from '../../message/normalize.js';
import type { MessageProperties, PublishBody, StoredMessage } from '../../message/types.js';
import { memoryStorage } from '../../storage/memory.js';
import type { JsonValue, Log, Namespace, StorageAdapter } from '../../storage/types.js';
import {
  type ConsumerCallback,
  checkSubscribeParams,
  generateConsumerTag,
  type SubscribeParams,
  type Subscription,
} from '../consumer.js';
import { releaseQueueStorage } from '../release-storage.js';
import { refuseUnknownArguments, refuseUnknownKeys } from '../unknown-names.js';
import {
  parseStreamArguments,
  STREAM_ARGUMENTS,
  type StreamArguments,
  type StreamDeclaration,
  streamArgumentsDiff,
} from './arguments.js';
import { checkContinuity } from './continuity.js';
import { parseOffsetSpec, resolveOffsetSpec } from './offset-spec.js';
import { type ReadOptions, StreamReader } from './reader.js';
import { StreamRetention } from './retention.js';
import { StreamConsumer, type StreamConsumerContext } from './stream-consumer.js';
import { FilterSummaries } from './summaries.js';
import { OffsetStore } from './tracking.js';

/** Options of `StreamQueue.open()`. */
export interface StreamQueueOptions extends StreamDeclaration {
  /** Queue name. */
  readonly name: string;
  /** Where the stream lives (default: a private memory storage). */
  readonly storage?: StorageAdapter;
  /** Storage namespace of the stream (default: the queue name). */
  readonly namespace?: string;
  /** Clock for arrival times and `x-max-age` (default: the system clock). */
  readonly clock?: Clock;
  /** Called once when the stream was deleted. */
  readonly onDelete?: (name: string) => void;
  /**
   * Receives errors nobody awaits, with where they came from (a consumer callback that threw,
   * retention that failed, an `OffsetClampedError` per stored consumer offset found past the end
   * on open). Default: a process warning.
   */
  readonly onError?: ErrorHandler;
  /**
   * Refuse what the stream would ignore: a queue argument it does not act on, a consumer
   * argument it does not know (406, naming the nearest known one). Default false.
   */
  readonly strict?: boolean;
  /** The virtual host named in the stream's errors (default `/`; the Broker passes its own). */
  readonly vhost?: string;
  /** Receives the offsets found lost on open (see `continuity.ts`); the broker's `onError`. */
  readonly onDataLoss?: (loss: DataLossError) => void;
}

const STREAM_OPTIONS: ReadonlySet<string> = new Set<keyof StreamQueueOptions>([
  'name',
  'storage',
  'namespace',
  'clock',
  'onDelete',
  'onError',
  'strict',
  'vhost',
  'onDataLoss',
  'durable',
  'exclusive',
  'autoDelete',
  'arguments',
]);

/** What `open()` hands to the constructor. */
interface StreamInit {
  readonly name: string;
  readonly arguments: StreamArguments;
  readonly storage: StorageAdapter;
  /** The stream created the storage itself and closes it with the stream. */
  readonly ownsStorage: boolean;
  readonly namespace: Namespace;
  readonly log: Log<StoredMessage>;
  readonly clock: Clock;
  readonly onDelete: ((name: string) => void) | undefined;
  readonly onError: ErrorHandler;
  readonly strict: boolean;
  readonly vhost: string;
}

/** Prefetch of a stream consumer that gave none: streams need a bounded window. */
export const DEFAULT_STREAM_PREFETCH = 1000;

/** Indexed matches gathered before delivering them: enough to overlap their cache misses. */
const MATCH_BATCH = 64;

const LOG_NAME = 'messages';
const ignoreLoss = () => {};
const ARGUMENTS_KEY = 'stream.arguments';
const TRACKING_ARG = 'x-stream-automatic-offset-tracking';
/** Consumer arguments a stream knows (strict mode refuses any other). */
const CONSUMER_ARGUMENTS: readonly string[] = [
  'x-stream-offset',
  TRACKING_ARG,
  FILTER_ARG,
  MATCH_TYPE_ARG,
  MATCH_UNFILTERED_ARG,
  'x-priority',
];

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
  readonly #strict: boolean;
  readonly #vhost: string;
  readonly #offsets: OffsetStore;
  readonly #retention: StreamRetention;
  readonly #consumers = new Map<string, StreamConsumer>();
  /** Consumers and readers waiting at the end of the log for the next publish. */
  #waiting = new Set<{ wake(): void }>();
  #spareWaiting = new Set<{ wake(): void }>();
  /**
   * Consumers whose filter bounds their matches to a region, or to messages carrying given filter
   * values, are indexed for their whole life (re-indexing at every wake-up would cost more than
   * the wake-up): while they wait at the end, a publish finds them through the index and hands
   * them their matches, instead of every consumer being woken to read every message.
   */
  readonly #geoConsumers = new GeoIndex<StreamConsumer>();
  readonly #valueConsumers = new ValueIndex<StreamConsumer>();
  /** The indexed consumers that track their offset: each tick moves them past what they skip. */
  readonly #trackedIndexed = new Set<StreamConsumer>();
  readonly #summaries: FilterSummaries;
  /** Offsets below this were checked against the indexed consumers. */
  #scanned: number;
  /** Indexed consumers. */
  #indexed = 0;
  /** Offsets and messages with headers published this tick while indexed consumers existed. */
  #indexedOffsets: number[] = [];
  #indexedMessages: StoredMessage[] = [];
  #spareIndexedOffsets: number[] = [];
  #spareIndexedMessages: StoredMessage[] = [];
  /**
   * Indexed matches found and not yet delivered: the consumer, and the index of its message in
   * the tick's buffers. Delivered in order once {@link MATCH_BATCH} gathered (see
   * `#deliverMatchBatch`).
   */
  readonly #matchConsumers: StreamConsumer[] = [];
  readonly #matchMessages: number[] = [];
  readonly #matchStates = new Uint8Array(MATCH_BATCH);
  /** Index of the message the indexes are searched for. */
  #matchMessage = 0;
  /** When the log's bytes reach this, its active segment filled: run retention. */
  #rollCheckBytes = 0;
  #tickScheduled = false;
  #tickTime = 0;
  #closed = false;
  readonly #context: StreamConsumerContext;

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
    this.#strict = init.strict;
    this.#vhost = init.vhost;
    this.#offsets = new OffsetStore(namespace.meta, log.nextOffset);
    this.#summaries = new FilterSummaries(namespace.meta, log.firstOffset, log.nextOffset);
    this.#scanned = log.nextOffset;
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
      scanned: () => this.#scanned,
      closed: () => this.#closed,
      summaries: this.#summaries,
      reportError: (error, source, consumerTag) => this.#reportError(error, source, consumerTag),
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
    if (typeof options?.name !== 'string') throw new TypeError('StreamQueue.open() needs a name');
    refuseUnknownKeys(options, STREAM_OPTIONS, 'StreamQueue.open() option');
    if (options.strict !== undefined && typeof options.strict !== 'boolean') {
      throw new TypeError('StreamQueue.open() option strict must be a boolean');
    }
    if (options.vhost !== undefined && typeof options.vhost !== 'string') {
      throw new TypeError('StreamQueue.open() option vhost must be a string');
    }
    const vhost = options.vhost ?? DEFAULT_VHOST;
    const name = options.name;
    const declared = parseStreamArguments(options);
    const strict = options.strict === true;
    if (strict) {
      refuseUnknownArguments(options.arguments, STREAM_ARGUMENTS, 'argument', name, vhost);
    }
    const ownsStorage = options.storage === undefined;
    const storage = options.storage ?? memoryStorage();
    const namespace = await storage.namespace(options.namespace ?? name);
    const stored = namespace.meta.get(ARGUMENTS_KEY) as StreamArguments | undefined;
    if (stored !== undefined && options.arguments !== undefined) {
      const diff = streamArgumentsDiff(stored, declared);
      if (diff !== undefined) throw inequivalentArg(diff, queueResource(options));
    }
    const args = stored ?? declared;
    if (stored === undefined) namespace.meta.set(ARGUMENTS_KEY, args as unknown as JsonValue);
    const log = await namespace.openLog(LOG_NAME, messageViewCodec, {
      segmentBytes: args.segmentBytes,
    });
    checkContinuity(name, log, namespace.meta, options.onDataLoss ?? ignoreLoss);
    const queue = new StreamQueue({
      name,
      arguments: args,
      storage,
      ownsStorage,
      namespace,
      log,
      clock: options.clock ?? systemClock,
      onDelete: options.onDelete,
      onError: options.onError ?? warnOnError,
      strict,
      vhost,
    });
    for (const { tag, stored, clamped } of queue.#offsets.clampTo(log.nextOffset)) {
      queue.#reportError(new OffsetClampedError(name, tag, stored, clamped), 'storage', tag);
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
      const ownership = this.#keepsNothing && this.#indexed === 0 ? 'borrow' : 'copy';
      message = normalizeMessage(body, properties, '', this.name, undefined, ownership);
      checkGeoHeaders(message.properties.headers);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.publishMessage(message);
  }

  /**
   * Appends a message already normalized (by a router that delivers one message to several
   * queues). Resolves as `publish` does.
   */
  publishMessage(message: StoredMessage): Promise<void> {
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
      if (headers !== undefined && this.#indexed > 0) {
        this.#indexedOffsets.push(offset);
        this.#indexedMessages.push(message);
      }
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
    const log = this.#open();
    checkSubscribeParams(params);
    if (params.noAck === true) {
      throw new PreconditionFailedError(
        'stream consumers must acknowledge messages (noAck is not allowed)',
      );
    }
    if (params.prefetch === 0) {
      throw new PreconditionFailedError(
        'stream consumers need a prefetch limit (prefetch 0 is not allowed)',
      );
    }
    if (params.exclusive === true) {
      throw new PreconditionFailedError('exclusive consumers are not allowed on streams');
    }
    const args = params.args ?? {};
    if (args['x-priority'] !== undefined) {
      throw new PreconditionFailedError('consumer priority (x-priority) is not allowed on streams');
    }
    if (this.#strict) {
      refuseUnknownArguments(args, CONSUMER_ARGUMENTS, 'consumer argument', this.name, this.#vhost);
    }
    const explicit = args['x-stream-offset'];
    const spec = explicit === undefined ? undefined : parseOffsetSpec(explicit);
    const filter = parseStreamFilter(args);
    if (params.tag !== undefined && typeof params.tag !== 'string') {
      throw new TypeError('consumer tag must be a string');
    }
    const tag = params.tag || generateConsumerTag();
    if (this.#consumers.has(tag)) {
      throw new PreconditionFailedError(
        `consumer tag '${tag}' is already in use on queue '${this.name}'`,
      );
    }
    const automatic = args[TRACKING_ARG] === true || args[TRACKING_ARG] === 'true';
    const tracking = !tag.startsWith('amq.ctag-') && (spec === undefined || automatic);
    // A stored offset beyond the end (a crash cut the log's tail) resumes at the end.
    const storedOffset = tracking ? this.#offsets.get(tag) : undefined;
    const stored = storedOffset === undefined ? undefined : Math.min(storedOffset, log.nextOffset);
    const start = stored ?? (spec === undefined ? log.firstOffset : resolveOffsetSpec(spec, log));
    const consumer = new StreamConsumer(
      this.#context,
      this.name,
      { ...params, tag, prefetch: params.prefetch ?? DEFAULT_STREAM_PREFETCH },
      { start, tracking, filter },
      callback,
    );
    this.#consumers.set(tag, consumer);
    if (consumer.indexed) {
      this.#indexed++;
      if (!this.#geoConsumers.insert(consumer, filter!))
        this.#valueConsumers.insert(consumer, filter!);
      if (tracking) this.#trackedIndexed.add(consumer);
    }
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
    this.#wakeIndexed();
    if (this.#waiting.size === 0) return;
    // Swap sets: a woken waiter that reaches the end again parks in the fresh one.
    const waiting = this.#waiting;
    this.#waiting = this.#spareWaiting;
    this.#spareWaiting = waiting;
    for (const waiter of waiting) waiter.wake();
    waiting.clear();
  };

  /**
   * Finds the waiting indexed consumers that messages published this tick match (through the
   * indexes, not by asking every consumer) and hands each exactly its matches.
   */
  #wakeIndexed(): void {
    const end = this.#log.nextOffset;
    if (this.#indexedOffsets.length > 0) this.#deliverIndexedMatches();
    this.#scanned = end;
    // A skipped message never holds back a stored offset, even of a consumer nobody woke.
    for (const consumer of this.#trackedIndexed) consumer.passTo(end);
  }

  #deliverIndexedMatches(): void {
    // Swap buffers: a callback that publishes fills the other pair for the next tick.
    const offsets = this.#indexedOffsets;
    const messages = this.#indexedMessages;
    this.#indexedOffsets = this.#spareIndexedOffsets;
    this.#indexedMessages = this.#spareIndexedMessages;
    this.#spareIndexedOffsets = offsets;
    this.#spareIndexedMessages = messages;
    const geo = this.#geoConsumers.size > 0 ? this.#geoConsumers : undefined;
    const byValue = this.#valueConsumers.size > 0 ? this.#valueConsumers : undefined;
    for (let i = 0; i < offsets.length; i++) {
      const headers = messages[i]!.properties.headers!;
      this.#matchMessage = i;
      geo?.forEachMatch(headers, this.#gatherMatch);
      byValue?.forEachMatch(headers, this.#gatherMatch);
      if (this.#matchConsumers.length >= MATCH_BATCH) this.#deliverMatchBatch(offsets, messages);
    }
    this.#deliverMatchBatch(offsets, messages);
    offsets.length = 0;
    messages.length = 0;
  }

  readonly #gatherMatch = (consumer: StreamConsumer): void => {
    this.#matchConsumers.push(consumer);
    this.#matchMessages.push(this.#matchMessage);
  };

  /**
   * Delivers the gathered matches in order. Each consumer's state is read for the whole batch
   * before any delivery: thousands of consumers do not fit the CPU caches, and these independent
   * reads overlap their misses where a delivery at a time would wait for each in turn. A consumer
   * that is not waiting for a match then stays so: one reading the log on its own reads it there.
   */
  #deliverMatchBatch(offsets: readonly number[], messages: readonly StoredMessage[]): void {
    const consumers = this.#matchConsumers;
    const at = this.#matchMessages;
    const states = this.#matchStates;
    // A single message may match more consumers than a batch holds.
    for (let start = 0; start < consumers.length; start += MATCH_BATCH) {
      const end = Math.min(consumers.length, start + MATCH_BATCH);
      for (let i = start; i < end; i++)
        states[i - start] = consumers[i]!.waitState(offsets[at[i]!]!);
      for (let i = start; i < end; i++) {
        if (states[i - start] === 0) continue;
        const offset = offsets[at[i]!]!;
        // Offsets below this were checked and handed over: a consumer cancelled from here on
        // resumes here.
        this.#scanned = offset;
        consumers[i]!.deliverMatch(offset, messages[at[i]!]!);
      }
    }
    consumers.length = 0;
    at.length = 0;
  }

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
    if (this.#geoConsumers.remove(consumer) || this.#valueConsumers.remove(consumer)) {
      this.#indexed--;
    }
    this.#trackedIndexed.delete(consumer);
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
    this.#geoConsumers.clear();
    this.#valueConsumers.clear();
    this.#indexed = 0;
    this.#trackedIndexed.clear();
    // Waiting readers wake to a closed stream and finish with ClosedError.
    for (const waiter of waiting) waiter.wake();
  }

  #open(): Log<StoredMessage> {
    if (this.#closed) throw new ClosedError(`stream queue '${this.name}' is closed`);
    return this.#log;
  }
}

function ignore(): void {}
