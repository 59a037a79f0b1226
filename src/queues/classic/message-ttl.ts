/**
 * Message TTL of a classic queue (`x-message-ttl` and each message's `expiration`): which ready
 * message expires when, and the one timer that expires them wherever they are in the queue.
 * Separate from `ClassicQueue` because it is a clock-driven rule of its own; what expiring a
 * message means (the drop event, dead-lettering) stays the queue's, behind `expire`.
 */
import type { Clock, TimerHandle } from '../../clock.js';
import type { StoredMessage } from '../../message/types.js';
import { ExpiryIndex } from './expiry-index.js';
import type { ReadyStore } from './ready-store.js';

/** When the ready messages of one queue expire; the queue tells it what arrives and returns. */
export class MessageTtl {
  readonly #clock: Clock;
  readonly #store: ReadyStore;
  /** Removes an expired ready message (the queue's drop path). */
  readonly #expire: (handle: number) => void;
  /** Reports an error of the timer's work. */
  readonly #onError: (error: unknown) => void;
  /** `x-message-ttl` in force, or Infinity. */
  #queueTtl: number;
  readonly #index: ExpiryIndex;
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #closed = false;

  constructor(
    clock: Clock,
    store: ReadyStore,
    queueTtl: number | undefined,
    expire: (handle: number) => void,
    onError: (error: unknown) => void,
  ) {
    this.#clock = clock;
    this.#store = store;
    this.#index = new ExpiryIndex((handle) => store.rank(handle));
    this.#queueTtl = queueTtl ?? Number.POSITIVE_INFINITY;
    this.#expire = expire;
    this.#onError = onError;
  }

  /** Some ready message has an expiry indexed: `expireDue` has work to look at. */
  get pending(): boolean {
    return this.#index.size > 0;
  }

  /** A new `x-message-ttl` (undefined: none): it applies to messages published from now on. */
  setQueueTtl(queueTtl: number | undefined): void {
    this.#queueTtl = queueTtl ?? Number.POSITIVE_INFINITY;
  }

  /** Effective TTL of a message: the lower of `x-message-ttl` and its `expiration`. */
  of(message: StoredMessage): number {
    const expiration = message.properties.expiration;
    if (expiration === undefined) return this.#queueTtl;
    const ttl = Number(expiration);
    return Math.min(ttl, this.#queueTtl);
  }

  /** Indexes a ready message that expires at `at`. */
  index(at: number, handle: number): void {
    const expiry = this.#index;
    expiry.push(at, handle);
    if (at < this.#timerAt) this.#armTimer();
    // Entries of messages consumed before they expired pile up: sweep them now and then.
    if (expiry.size > 1024 && expiry.size > 2 * this.#store.readyCount) {
      expiry.compact((h) => this.#store.isReady(h));
    }
  }

  /** A message is ready again (requeued): it expires now if its time has passed, or is indexed. */
  requeued(handle: number): void {
    const store = this.#store;
    const ttl = this.of(store.message(handle));
    if (ttl === Number.POSITIVE_INFINITY) return;
    const at = store.timestamp(handle) + ttl;
    if (at <= this.#clock.now()) this.#expire(handle);
    else this.index(at, handle);
  }

  /** Expires every ready message whose time has come, wherever it is in the queue. */
  expireDue(): void {
    const expiry = this.#index;
    const now = this.#clock.now();
    while (expiry.size > 0 && expiry.nextAt <= now) {
      const handle = expiry.nextHandle;
      expiry.pop();
      if (this.#store.isReady(handle)) this.#expire(handle);
    }
    this.#armTimer();
  }

  /** Forgets every indexed expiry (the queue was purged: nothing indexed is ready any more). */
  clear(): void {
    this.#index.clear();
  }

  /**
   * After a reopen: indexes the expiry of recovered messages and expires those already due. Reads
   * no message: arrival times come from the log and per-message expirations from the store, which
   * noted them while it opened.
   */
  recover(): void {
    const store = this.#store;
    const queueTtl = this.#queueTtl;
    const expiry = this.#index;
    if (queueTtl !== Number.POSITIVE_INFINITY) {
      for (const handle of [...store.ready()])
        expiry.push(store.timestamp(handle) + queueTtl, handle);
    }
    // A handle indexed twice is harmless: whichever entry comes due first expires it.
    for (const [handle, ttl] of store.takeRecoveredExpirations()) {
      if (ttl < queueTtl) expiry.push(store.timestamp(handle) + ttl, handle);
    }
    if (expiry.size > 0) this.expireDue();
  }

  /** The queue closed: the timer stops for good. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #armTimer(): void {
    const at = this.#index.nextAt;
    if (at === this.#timerAt) return;
    const clock = this.#clock;
    if (this.#timer !== undefined) clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = at;
    if (at === Number.POSITIVE_INFINITY || this.#closed) return;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      if (this.#closed) return;
      try {
        this.expireDue();
      } catch (error) {
        this.#onError(error);
      }
    }, at - clock.now());
  }
}
