import type { Clock, TimerHandle } from '../clock.js';

interface ManualTimer extends TimerHandle {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told to. Timers fire synchronously inside `advance()`, in
 * due-time order (ties in creation order), each seeing `now()` equal to its due time.
 *
 * ```ts
 * const clock = new ManualClock();
 * const broker = await Broker.open({ clock });
 * clock.advance(60_000); // a minute passes, instantly
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: ManualTimer[] = [];

  /** @param start the initial time in ms since the epoch (default 2024-01-01T00:00:00Z). */
  constructor(start = Date.UTC(2024, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = {
      at: this.#now + Math.max(0, ms),
      seq: this.#seq++,
      fn,
      cancelled: false,
    };
    this.#timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    const timer = handle as ManualTimer;
    timer.cancelled = true;
    const i = this.#timers.indexOf(timer);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /** Timers that are scheduled and not yet fired. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('ManualClock.advance() needs a non-negative number');
    this.setTime(this.#now + ms);
  }

  /** Moves time to `time` (never backwards), firing due timers on the way. */
  setTime(time: number): void {
    if (time < this.#now) throw new RangeError('ManualClock cannot go backwards');
    for (;;) {
      const next = this.#nextDue(time);
      if (!next) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#now = next.at;
      next.fn();
    }
    this.#now = time;
  }

  #nextDue(limit: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (t.at <= limit && (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq))) {
        best = t;
      }
    }
    return best;
  }
}
