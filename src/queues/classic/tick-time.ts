/**
 * The clock read once per tick: the arrival time of a message that never expires is only
 * informative, and a burst of publishes then costs one clock read, not one each. Separate from
 * `ClassicQueue` because it is a question about the clock alone.
 */
import type { Clock } from '../../clock.js';

/** One queue's clock, read at most once per tick. */
export class TickTime {
  readonly #clock: Clock;
  /** The clock's time this tick; NaN when not read yet. */
  #now = Number.NaN;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The clock's time, as first read this tick. */
  now(): number {
    let now = this.#now;
    if (Number.isNaN(now)) {
      now = this.#now = this.#clock.now();
      queueMicrotask(this.#end);
    }
    return now;
  }

  readonly #end = (): void => {
    this.#now = Number.NaN;
  };
}
