/**
 * When buffered writes reach the OS and when they are fsynced. One scheduler serves each log and
 * each metadata store: mutations mark it dirty and queue one write for the end of the tick (so a
 * burst of appends becomes one `write`), and `sync()` hands out one shared promise per fsync
 * round, so a thousand publishes in a tick cost one promise and one fsync.
 *
 * Under `always` and group commit, a buffer that a `sync()` waits on is written when its fsync
 * round starts rather than at the end of each tick: under load that is one write per round, not
 * one per tick per log, and no waiter resolves any sooner either way. Until then a process crash
 * loses those records, as a power loss would; their `sync()` had not resolved. Mutations nobody
 * waits on (acks, metadata) still reach the OS at the end of the tick.
 */

/** How the fs adapter makes writes durable. */
export type FsyncPolicy =
  /** `sync()` resolves after an fsync that covers the caller's writes; rounds run back to back. */
  | 'always'
  /** Writes are handed to the OS only: survives a process crash, not a power loss. */
  | 'never'
  /**
   * Group commit: at most one fsync round per `intervalMs`. A `sync()` after a quiet period
   * starts a round at once; under load, waiters share one round per interval.
   */
  | { readonly intervalMs: number };

/** Checks a policy given by the user. */
export function checkFsyncPolicy(policy: unknown): FsyncPolicy {
  if (policy === 'always' || policy === 'never') return policy;
  if (typeof policy === 'object' && policy !== null && 'intervalMs' in policy) {
    const ms = (policy as { intervalMs: unknown }).intervalMs;
    if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0) return { intervalMs: ms };
    throw new RangeError(`fsync.intervalMs must be a finite number >= 0, got ${String(ms)}`);
  }
  throw new TypeError(
    `fsync must be 'always', 'never' or { intervalMs }, got ${JSON.stringify(policy)}`,
  );
}

/** What a scheduler drives. */
export interface SyncTarget {
  /** Writes buffered bytes to the OS. Throws on an I/O error. */
  flush(): void;
  /** Fsyncs everything written so far; calls `done` once, with the first error if any. */
  fsync(done: (error: Error | null) => void): void;
  /**
   * Whether a flush that failed may simply be done again: it then writes at least the bytes the
   * failed one tried, at the same place, so nothing of a partial write outlives it. Otherwise a
   * failed flush fails the target until it is reopened.
   */
  readonly redoesFailedFlush?: boolean;
}

interface Group {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

function group(): Group {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Rejections reach whoever awaits the promise; nobody awaiting is not an unhandled error.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

const DONE: Promise<void> = Promise.resolve();

export class SyncScheduler {
  /** Mutated since the last fsync round started (for `never`: since the last write). */
  #dirty = false;
  /** Waiters for the next round. */
  #waiting: Group | undefined;
  /** Waiters of the round in flight. */
  #inFlight: Group | undefined;
  #flushQueued = false;
  #timer: NodeJS.Timeout | undefined;
  #lastRound = Number.NEGATIVE_INFINITY;
  #failure: Error | undefined;
  /** Whether `#failure` was a failed write, which a later one may redo (see `recover()`). */
  #retryable = false;
  readonly #policy: FsyncPolicy;
  readonly #target: SyncTarget;

  constructor(policy: FsyncPolicy, target: SyncTarget) {
    this.#policy = policy;
    this.#target = target;
  }

  /** The I/O error that stopped this target, if any. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Records a mutation and queues its write for the end of the tick. */
  touch(): void {
    this.#dirty = true;
    this.#queueFlush();
  }

  /**
   * After a failed write (a full disk, say), writes again what it could not: a write covers the
   * whole buffer from where the file's confirmed part ends, so it replaces whatever part of the
   * failed one reached the file. The target works on from there, its next round fsyncing it.
   * After a failed fsync, or when writing fails again, throws: an fsync error may have dropped
   * written pages, so that target stays failed until reopened.
   */
  recover(): void {
    const failure = this.#failure;
    if (!failure) return;
    if (!this.#retryable) throw failure;
    try {
      this.#target.flush();
    } catch (error) {
      this.#failure = error as Error;
      throw error;
    }
    this.#failure = undefined;
    this.#retryable = false;
    this.#dirty = true;
  }

  /** Resolves once everything mutated before the call is durable per the policy. */
  sync(): Promise<void> {
    if (this.#failure) {
      try {
        this.recover();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (!this.#dirty) return this.#inFlight?.promise ?? DONE;
    this.#waiting ??= group();
    this.#queueFlush();
    return this.#waiting.promise;
  }

  /**
   * Asks for a round as a `sync()` would, with nobody waiting: the target has writes held until
   * the records before them are durable.
   */
  request(): void {
    if (this.#failure) return;
    this.#dirty = true;
    this.#waiting ??= group();
    this.#queueFlush();
  }

  /** Writes and fsyncs (per policy) everything now, waiting for any round in flight. */
  async drain(): Promise<void> {
    for (;;) {
      this.recover();
      if (this.#inFlight) {
        await this.#inFlight.promise.catch(() => {});
        continue;
      }
      this.#flushNow();
      if (this.#failure) throw this.#failure;
      if (this.#policy === 'never' || !this.#dirty) {
        this.#settleWritten();
        return;
      }
      this.#waiting ??= group();
      const done = this.#waiting.promise;
      this.#startRound();
      await done;
    }
  }

  /** Stops timers; pending waiters are rejected with `error` (after a failed close or a delete). */
  stop(error: Error): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#failure ??= error;
    this.#waiting?.reject(error);
    this.#waiting = undefined;
    this.#dirty = false;
  }

  /** Marks the target failed: every waiter and every later `sync()` gets `error`. */
  fail(error: Error): void {
    this.stop(error);
  }

  /**
   * Marks a write failed: its waiters get `error`, and so does every later call until a write
   * succeeds (see `recover()`).
   */
  failWrite(error: Error): void {
    if (this.#failure) return;
    this.stop(error);
    this.#retryable = true;
  }

  #queueFlush(): void {
    if (this.#flushQueued || (this.#failure && !this.#retryable)) return;
    this.#flushQueued = true;
    setImmediate(this.#onImmediate);
  }

  readonly #onImmediate = (): void => {
    this.#flushQueued = false;
    if (this.#failure) {
      // A mutation after a failed write (an ack, say) tries the write again.
      try {
        this.recover();
      } catch {
        return;
      }
    }
    if (this.#policy === 'never') {
      this.#flushNow();
      this.#settleWritten();
      return;
    }
    // With waiters, the next fsync round writes the buffer first, within one interval: a write
    // per tick would cost a syscall per tick per log under load and make no confirm earlier.
    // Only writes nobody waits for go out at the end of the tick.
    if (!this.#waiting) this.#flushNow();
    this.#advance();
  };

  #flushNow(): void {
    try {
      this.#target.flush();
    } catch (error) {
      if (this.#target.redoesFailedFlush) this.failWrite(error as Error);
      else this.fail(error as Error);
    }
  }

  /** Under `never`, a write is all a waiter waits for. */
  #settleWritten(): void {
    if (this.#failure) return;
    this.#dirty = false;
    this.#waiting?.resolve();
    this.#waiting = undefined;
  }

  #advance(): void {
    if (this.#inFlight || !this.#waiting || this.#failure || this.#timer) return;
    const policy = this.#policy;
    if (typeof policy === 'object') {
      const wait = this.#lastRound + policy.intervalMs - performance.now();
      if (wait > 0) {
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#advance();
        }, wait);
        return;
      }
    }
    this.#startRound();
  }

  #startRound(): void {
    this.#flushNow();
    const round = this.#waiting;
    if (this.#failure || !round) return;
    this.#waiting = undefined;
    this.#dirty = false;
    this.#inFlight = round;
    this.#lastRound = performance.now();
    this.#target.fsync((error) => {
      this.#inFlight = undefined;
      if (error) {
        this.fail(error);
        round.reject(error);
        return;
      }
      round.resolve();
      this.#advance();
    });
  }
}
