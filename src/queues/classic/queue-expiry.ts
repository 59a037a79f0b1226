/**
 * Queue expiry (`x-expires`): the countdown after which a queue nobody uses deletes itself.
 * Separate from `ClassicQueue` because it is a clock-driven rule of its own; what "in use" means
 * (a consumer or a browser attached) and what deleting does stay the queue's.
 */
import type { Clock, TimerHandle } from '../../clock.js';

/** The `x-expires` countdown of one queue. */
export class QueueExpiry {
  readonly #clock: Clock;
  /** The countdown ran out: the queue checks it is still unused and deletes itself. */
  readonly #expired: () => void;
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(clock: Clock, expired: () => void) {
    this.#clock = clock;
    this.#expired = expired;
  }

  /** Starts the countdown over from `expires` ms; undefined: the queue does not expire. */
  restart(expires: number | undefined): void {
    if (expires === undefined || this.#closed) return;
    this.stop();
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      if (!this.#closed) this.#expired();
    }, expires);
  }

  /** Stops the countdown (a consumer came, or the limit changed). */
  stop(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The queue closed: no countdown starts again. */
  close(): void {
    this.#closed = true;
    this.stop();
  }
}
