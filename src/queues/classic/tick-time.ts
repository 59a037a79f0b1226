/**
 * The clock read once per tick: the arrival time of a message that never expires is only
 * informative, and a burst of publishes then costs one clock read, not one each.
 */
import type { Clock } from '../../clock.js';

export class TickTime {
  readonly #clock: Clock;
  /** The clock's time this tick; NaN when not read yet. */
  #now = Number.NaN;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The clock's time, read at the first call of this tick. */
  now(): number {
    let now = this.#now;
    if (Number.isNaN(now)) {
      now = this.#now = this.#clock.now();
      queueMicrotask(this.#endTick);
    }
    return now;
  }

  readonly #endTick = (): void => {
    this.#now = Number.NaN;
  };
}
