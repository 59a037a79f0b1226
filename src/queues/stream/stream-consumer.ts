import type { ErrorSource } from '../../diagnostics.js';
import type { CompiledStreamFilter } from '../../filters/compile.js';
import type { StoredMessage } from '../../message/types.js';
import type { Log, LogCursor } from '../../storage/types.js';
import {
  type ConsumerCallback,
  type ConsumerHost,
  type SubscribeParams,
  Subscription,
} from '../consumer.js';
import { FilterScan, type FilterSummaries } from './summaries.js';
import { type OffsetStore, UnsettledOffsets } from './tracking.js';

/** The header every stream delivery carries its offset in. */
export const OFFSET_HEADER = 'x-stream-offset';

/** Records one consumer handles per turn before yielding the event loop to others. */
const TURN_BUDGET = 16_384;

/** What a stream consumer needs from its stream. */
export interface StreamConsumerContext {
  readonly log: Log<StoredMessage>;
  readonly offsets: OffsetStore;
  /** The consumer reached the end of the log: wake it on the next publish. */
  park(consumer: StreamConsumer): void;
  /** The consumer reads again on its own (its acks freed room): stop waking it. */
  unpark(consumer: StreamConsumer): void;
  /** The consumer was cancelled. */
  detach(consumer: StreamConsumer): void;
  /**
   * Offsets below this were checked against consumers waiting in the stream's indexes: such a
   * consumer that was not woken matched none of them.
   */
  scanned(): number;
  /** Whether the stream was closed. */
  closed(): boolean;
  /** Block summaries that let a filtered consumer skip history that cannot match. */
  readonly summaries: FilterSummaries;
  /** Reports an error nobody awaits (its callback's, or a turn's that failed). */
  reportError(error: unknown, source: ErrorSource, consumerTag: string): void;
}

/** How a stream consumer starts and tracks, decided by the stream from its arguments. */
export interface StreamConsumerOptions {
  /** First offset to read. */
  readonly start: number;
  /** Whether progress is stored under the consumer tag. */
  readonly tracking: boolean;
  /** Only messages it matches are delivered; the others are skipped. */
  readonly filter: CompiledStreamFilter | undefined;
}

/**
 * One stream consumer: its own cursor over the log, its own redelivery list of requeued offsets,
 * an optional filter, and offset tracking. It is the `ConsumerHost` of its `Subscription`.
 *
 * - Requeued messages (nack/reject with requeue) are delivered again before newer ones, in
 *   rejection order, with `redelivered: true` and their offset; they are not filtered again and
 *   are lost when the consumer goes.
 * - A filtered-out message moves the position past it and never holds back the stored offset.
 * - The stored offset is the first offset not yet settled (acked, or rejected without requeue):
 *   everything before it was acked or skipped, so resuming there never loses a delivered but
 *   unacknowledged message.
 */
export class StreamConsumer implements ConsumerHost<number> {
  // Fields are laid out in declaration order: what a delivery reads comes first, so that with
  // thousands of consumers a delivery misses the cache on as few lines as possible.
  #parked = false;
  /** Next offset the cursor reads. */
  #position: number;
  /** The subscription handed to the user. */
  readonly subscription: Subscription<number>;
  #pumping = false;
  /** An index moved the position while parked; the cursor follows when it reads again. */
  #seekDue = false;
  /** What it was given and has not settled: kept only to store the resume offset. */
  readonly #unsettled: UnsettledOffsets | undefined;
  readonly tracking: boolean;
  /** Requeued offsets to deliver again, from `#redeliverHead` on; undefined while there are none. */
  #redeliver: number[] | undefined;
  #redeliverHead = 0;
  readonly filter: CompiledStreamFilter | undefined;
  /**
   * Its filter bounds its matches (to a region, or to filter values): the stream indexes it, and
   * while it waits at the end hands it its matches instead of waking it.
   */
  readonly indexed: boolean;

  readonly #context: StreamConsumerContext;
  readonly #cursor: LogCursor<StoredMessage>;
  /** Its filter's search state in the block summaries, with where it next consults them. */
  readonly #scan: FilterScan | undefined;
  #turnScheduled = false;
  #storeScheduled = false;
  /**
   * It settled (acked or rejected) something: only then does it store progress. A consumer that
   * settled nothing stores nothing and, resumed, starts from its `x-stream-offset` again.
   */
  #settledAny = false;

  constructor(
    context: StreamConsumerContext,
    queueName: string,
    params: SubscribeParams,
    options: StreamConsumerOptions,
    callback?: ConsumerCallback,
  ) {
    this.#context = context;
    this.filter = options.filter;
    this.indexed =
      options.filter !== undefined &&
      (options.filter.geoRegion !== undefined || options.filter.requiredValues !== undefined);
    this.tracking = options.tracking;
    this.#unsettled = options.tracking ? new UnsettledOffsets() : undefined;
    this.#position = options.start;
    this.#scan = options.filter && new FilterScan(options.filter);
    this.#cursor = context.log.cursor(options.start);
    this.subscription = new Subscription<number>(this, queueName, params, callback);
  }

  /** The consumer tag. */
  get tag(): string {
    return this.subscription.consumerTag;
  }

  /**
   * The offset this consumer would resume from: its first unsettled offset (tracking consumers
   * only keep them), or its position.
   */
  get resumeOffset(): number {
    const first = this.#unsettled?.first() ?? this.#position;
    return Math.max(first, this.#context.log.firstOffset);
  }

  /** Delivers what the log holds for it, up to its prefetch window. */
  start(): void {
    this.#pump();
  }

  /** Next offset its cursor reads. */
  get position(): number {
    return this.#position;
  }

  /** Whether it reached the end of the log and waits for a publish. */
  get parked(): boolean {
    return this.#parked;
  }

  /** New messages were published: continue if it was waiting at the end. */
  wake(): void {
    if (!this.#parked) return;
    this.#parked = false;
    this.#pump();
  }

  /**
   * Whether it waits for a match at `offset` (parked, not past it): 0 when not, else 2 with
   * prefetch room and 1 without. Reading it ahead of `deliverMatch` brings the consumer's state
   * into the cache.
   */
  waitState(offset: number): number {
    if (!this.#parked || offset < this.#position) return 0;
    return this.subscription.capacity > 0 ? 2 : 1;
  }

  /**
   * The stream found, through its indexes, that this consumer's filter matches the message
   * published at `offset`: deliver it without reading the log, if the consumer waits at the end
   * and has not read past it. Out of prefetch room, it reads on its own from there once acks
   * free room.
   */
  deliverMatch(offset: number, record: StoredMessage): void {
    if (!this.#parked || offset < this.#position) return;
    const sub = this.subscription;
    if (sub.capacity <= 0) {
      this.#parked = false;
      this.#position = offset;
      this.#seekDue = false;
      this.#cursor.seek(offset);
      return;
    }
    this.#position = offset + 1;
    this.#seekDue = true;
    this.#unsettled?.add(offset);
    // An ack from the callback must not make it read the log: the index hands it its matches.
    this.#pumping = true;
    try {
      sub.deliver(offset, record, false, OFFSET_HEADER, offset);
    } finally {
      this.#pumping = false;
    }
    // The callback requeued it: redeliveries go before anything newer.
    if (this.#redeliver !== undefined) this.#pump();
  }

  /**
   * The stream checked every message up to `end` against its indexes and this parked consumer
   * matched none it was not handed: move past them.
   */
  passTo(end: number): void {
    if (!this.#parked || this.#position >= end) return;
    this.#position = end;
    this.#seekDue = true;
    this.#storeProgress();
  }

  onAck(_consumer: Subscription<number>, offset: number): void {
    this.#unsettled?.settle(offset);
    this.#settledAny = true;
    this.#storeProgress();
  }

  onReject(consumer: Subscription<number>, offset: number, requeue: boolean): void {
    if (!requeue) {
      this.#unsettled?.settle(offset);
      this.#settledAny = true;
      this.#storeProgress();
    } else if (consumer.active) {
      // Stays unsettled (it holds back the stored offset) until redelivered and settled.
      (this.#redeliver ??= []).push(offset);
    }
  }

  onCapacity(): void {
    this.#pump();
  }

  onCallbackError(_consumer: Subscription<number>, error: unknown): void {
    this.#context.reportError(error, 'consumer', this.tag);
  }

  onCancel(): void {
    if (this.#parked && this.indexed) {
      // Waiting in an index, it matched nothing the stream has checked since it parked.
      this.#position = Math.max(this.#position, this.#context.scanned());
    }
    this.#parked = false;
    this.#context.detach(this);
    this.#writeProgress();
  }

  #pump(): void {
    // Re-entered from a synchronous callback's ack: the running loop sees the freed capacity.
    if (this.#pumping) return;
    // Parked means "at the end, waiting": the indexed wake-up relies on it.
    if (this.#parked) {
      this.#parked = false;
      this.#context.unpark(this);
      if (this.#seekDue) {
        this.#seekDue = false;
        this.#cursor.seek(this.#position);
      }
    }
    const sub = this.subscription;
    const cursor = this.#cursor;
    const filter = this.filter?.matches;
    const scan = this.#scan;
    this.#pumping = true;
    let budget = TURN_BUDGET;
    try {
      while (sub.capacity > 0) {
        if (this.#redeliver !== undefined) {
          if (--budget <= 0) {
            this.#yieldTurn();
            break;
          }
          this.#redeliverOne();
          continue;
        }
        // Reads on to the next message to deliver. What the filter skips spends the budget too,
        // but not the per-delivery checks: nothing reaches the consumer while it skips.
        let found = false;
        while (--budget > 0) {
          if (scan !== undefined && this.#position >= scan.until) this.#skip(scan);
          if (!cursor.next()) break;
          this.#position = cursor.offset + 1;
          if (
            filter === undefined ||
            cursor.offset < scan!.sureUntil ||
            filter(cursor.record.properties.headers)
          ) {
            found = true;
            break;
          }
        }
        if (!found) {
          if (budget <= 0) this.#yieldTurn();
          else {
            this.#parked = true;
            this.#context.park(this);
          }
          break;
        }
        const offset = cursor.offset;
        this.#unsettled?.add(offset);
        sub.deliver(offset, cursor.record, false, OFFSET_HEADER, offset);
      }
    } finally {
      this.#pumping = false;
    }
    this.#storeProgress();
  }

  /**
   * Jumps to the next message the block summaries cannot rule out. What it jumps over moves the
   * position (and so the stored offset) as a filtered-out message does.
   */
  #skip(scan: FilterScan): void {
    const { summaries, log } = this.#context;
    const from = Math.max(this.#position, log.firstOffset);
    const to = summaries.skip(scan, from);
    if (to > this.#position) {
      this.#cursor.seek(to);
      this.#position = to;
    }
  }

  #redeliverOne(): void {
    const redeliver = this.#redeliver!;
    const offset = redeliver[this.#redeliverHead++]!;
    if (this.#redeliverHead === redeliver.length) {
      this.#redeliver = undefined;
      this.#redeliverHead = 0;
    }
    const record = this.#context.log.get(offset);
    if (record === undefined) {
      // Retention dropped it while it waited: nothing left to redeliver.
      this.#unsettled?.settle(offset);
      return;
    }
    this.subscription.deliver(offset, record, true, OFFSET_HEADER, offset);
  }

  #yieldTurn(): void {
    if (this.#turnScheduled) return;
    this.#turnScheduled = true;
    setImmediate(() => {
      this.#turnScheduled = false;
      try {
        if (this.subscription.active) this.#pump();
      } catch (error) {
        this.#context.reportError(error, 'dispatch', this.tag);
      }
    });
  }

  /** Stores the resume offset once per tick, however many acks the tick held. */
  #storeProgress(): void {
    if (!this.tracking || this.#storeScheduled) return;
    this.#storeScheduled = true;
    queueMicrotask(this.#store);
  }

  readonly #store = (): void => {
    this.#storeScheduled = false;
    // A closed stream stored each consumer's last state when it closed it.
    if (!this.#context.closed()) this.#writeProgress();
  };

  #writeProgress(): void {
    if (this.tracking && this.#settledAny) this.#context.offsets.set(this.tag, this.resumeOffset);
  }
}
