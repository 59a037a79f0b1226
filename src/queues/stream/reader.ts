import { AbortedError, ClosedError } from '../../errors.js';
import type { StoredMessage } from '../../message/types.js';
import type { LogCursor } from '../../storage/types.js';

/** One message read from a stream by `read()`. */
export interface StreamEntry {
  /** The message's offset in the stream. */
  readonly offset: number;
  /** When the stream received it (ms since the epoch, on the stream's clock). */
  readonly timestamp: number;
  /** The message as stored; shared with every reader, so do not modify its body. */
  readonly message: StoredMessage;
}

/** Options of `StreamQueue.read()`. */
export interface ReadOptions {
  /** Most messages to yield (default: no limit). */
  readonly limit?: number;
  /** Stops the iteration; a pending or later `next()` rejects with `AbortedError`. */
  readonly signal?: AbortSignal;
  /**
   * Keep waiting for new messages at the end of the stream instead of finishing there
   * (default false: a replay of what the stream holds).
   */
  readonly follow?: boolean;
}

/** What a reader needs from its stream while it follows the end. */
export interface TailWaiters {
  closed(): boolean;
  park(waiter: { wake(): void }): void;
  unpark(waiter: { wake(): void }): void;
}

const DONE: IteratorResult<StreamEntry> = Object.freeze({ done: true, value: undefined });
const DONE_PROMISE = Promise.resolve(DONE);
/** Most results one `next()` reads ahead. */
const READ_AHEAD = 128;

/**
 * A replay iterator over a stream: it tracks nothing and acknowledges nothing, it only looks.
 * A `next()` over data already stored resolves at once without touching a timer or the event
 * loop.
 *
 * It is also a synchronous iterable over what is stored: `for (const entry of reader)` yields the
 * messages up to the end of the stream as it stands, without a promise per message (several
 * times faster than `for await`), and stops there even with `follow`; a `for await` loop on the
 * same reader may then go on following. `limit` and `signal` apply to both.
 */
export class StreamReader implements AsyncIterableIterator<StreamEntry>, Iterable<StreamEntry> {
  readonly #cursor: LogCursor<StoredMessage>;
  readonly #tail: TailWaiters;
  readonly #signal: AbortSignal | undefined;
  readonly #follow: boolean;
  #remaining: number;
  /**
   * Results read ahead: `next()` fills this from the cursor in one synchronous pass and serves
   * the following calls from it, so the checks and the cursor loop run once per batch, not once
   * per `for await` step.
   */
  readonly #ahead: IteratorResult<StreamEntry>[] = [];
  #aheadIndex = 0;
  #aheadEnd = 0;
  #done = false;
  #pending: { resolve(r: IteratorResult<StreamEntry>): void; reject(e: unknown): void } | undefined;
  readonly #onAbort = () => this.#abortPending();

  /** @internal Built by `StreamQueue.read()`. */
  constructor(cursor: LogCursor<StoredMessage>, tail: TailWaiters, options: ReadOptions) {
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (
      typeof limit !== 'number' ||
      !(limit >= 0) ||
      (Number.isFinite(limit) && !Number.isInteger(limit))
    ) {
      throw new RangeError(`limit must be a non-negative integer, got ${String(options.limit)}`);
    }
    this.#cursor = cursor;
    this.#tail = tail;
    this.#signal = options.signal;
    this.#follow = options.follow === true;
    this.#remaining = limit;
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  [Symbol.iterator](): IterableIterator<StreamEntry> {
    const sync: IterableIterator<StreamEntry> = {
      next: () => this.#nextSync(),
      return: () => {
        this.#finish();
        return DONE;
      },
      [Symbol.iterator]: () => sync,
    };
    return sync;
  }

  next(): Promise<IteratorResult<StreamEntry>> {
    if (this.#aheadIndex < this.#aheadEnd && !this.#signal?.aborted && !this.#tail.closed()) {
      return Promise.resolve(this.#ahead[this.#aheadIndex++]!);
    }
    if (this.#done) return DONE_PROMISE;
    if (this.#pending)
      return Promise.reject(new TypeError('read(): next() called while one is pending'));
    try {
      const result = this.#take();
      if (result) return Promise.resolve(result);
    } catch (error) {
      this.#finish();
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.#tail.park(this);
    });
  }

  #nextSync(): IteratorResult<StreamEntry> {
    if (this.#done) return DONE;
    if (this.#pending) throw new TypeError('read(): next() called while one is pending');
    try {
      // Straight from the cursor, with no read-ahead (left over only from a `for await`): a
      // result a `for...of` takes at once is never stored, so it costs no write barrier.
      if (this.#aheadIndex === this.#aheadEnd && this.#remaining > 0) {
        this.#checkReadable();
        const cursor = this.#cursor;
        if (cursor.next()) {
          this.#remaining--;
          return { done: false, value: entryAt(cursor) };
        }
      }
      // At the end of what is stored (following): this loop ends, the reader does not.
      return this.#take() ?? DONE;
    } catch (error) {
      this.#finish();
      throw error;
    }
  }

  return(): Promise<IteratorResult<StreamEntry>> {
    this.#finish();
    return DONE_PROMISE;
  }

  /** Called by the stream when something was published (or it closed). */
  wake(): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    try {
      const result = this.#take();
      if (result) pending.resolve(result);
      else {
        this.#pending = pending;
        this.#tail.park(this);
      }
    } catch (error) {
      this.#finish();
      pending.reject(error);
    }
  }

  /** The next result, or undefined when it has to wait for a publish. */
  #take(): IteratorResult<StreamEntry> | undefined {
    this.#checkReadable();
    if (this.#aheadIndex < this.#aheadEnd || this.#readAhead()) {
      return this.#ahead[this.#aheadIndex++];
    }
    if (this.#remaining > 0 && this.#follow) return undefined;
    this.#finish();
    return DONE;
  }

  /** Throws if the reader was aborted or the stream closed. */
  #checkReadable(): void {
    if (this.#signal?.aborted) throw aborted(this.#signal);
    if (this.#tail.closed()) throw new ClosedError('the stream was closed while reading');
  }

  /** Reads up to {@link READ_AHEAD} results from the cursor; false when none was there. */
  #readAhead(): boolean {
    const ahead = this.#ahead;
    const cursor = this.#cursor;
    const n = Math.min(READ_AHEAD, this.#remaining);
    let k = 0;
    while (k < n && cursor.next()) {
      ahead[k++] = { done: false, value: entryAt(cursor) };
    }
    this.#remaining -= k;
    this.#aheadIndex = 0;
    this.#aheadEnd = k;
    return k > 0;
  }

  #abortPending(): void {
    const pending = this.#pending;
    if (!pending) return; // the next call to next() rejects
    this.#pending = undefined;
    this.#finish();
    pending.reject(aborted(this.#signal!));
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#aheadIndex = this.#aheadEnd = 0;
    this.#ahead.length = 0;
    this.#tail.unpark(this);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.resolve(DONE);
  }
}

/** The entry the cursor stands on. */
function entryAt(cursor: LogCursor<StoredMessage>): StreamEntry {
  return { offset: cursor.offset, timestamp: cursor.timestamp, message: cursor.record };
}

function aborted(signal: AbortSignal): AbortedError {
  return new AbortedError('read() was aborted', { cause: signal.reason });
}
