/**
 * The time of one differential run: the real broker's time runs, and mqlite's `ManualClock` is
 * moved to the real time at which the broker began the same action, so both decide a TTL at the
 * same moment. Where they could still decide differently (a deadline falling while the broker
 * carries out an action, or within its timers' latency), the run steps around: before each
 * action it waits until no deadline is near; an action that overran into one marks the run as
 * raced, and a difference after that counts as the race, not as mqlite's.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** How far from a deadline the brokers may decide differently: timer and scheduling latency. */
const BAND_MS = 30;
/** What an action (an operation, an observation) usually takes on a loaded machine. */
const ACTION_MS = 60;

interface Deadline {
  readonly from: number;
  readonly to: number;
}

export class Timeline {
  readonly #start = performance.now();
  #deadlines: Deadline[] = [];
  #raced: string | undefined;

  /** Milliseconds since the run began. */
  elapsed(): number {
    return performance.now() - this.#start;
  }

  /** A message published between `from` and `to` (elapsed) expires `ttl` ms later. */
  expires(from: number, to: number, ttl: number): void {
    this.#deadlines.push({ from: from + ttl - BAND_MS, to: to + ttl + BAND_MS });
  }

  /** Waits until no deadline is near the next action; returns the time the action starts. */
  async clear(): Promise<number> {
    for (;;) {
      const now = this.elapsed();
      this.#deadlines = this.#deadlines.filter((d) => d.to > now);
      const near = this.#deadlines.filter((d) => d.from < now + ACTION_MS);
      if (near.length === 0) return now;
      await sleep(Math.max(...near.map((d) => d.to)) - now);
    }
  }

  /**
   * The action `what` that started at `start` has ended (at `end`, by default now): did a
   * deadline fall inside it?
   */
  ended(start: number, what: string, end = this.elapsed()): void {
    if (this.#raced === undefined && this.#deadlines.some((d) => d.from < end && d.to > start)) {
      this.#raced = `${what} took ${Math.round(end - start)} ms and met a message's deadline`;
    }
  }

  /** Why a difference from here on may be the race of a deadline, if one was met. */
  get raced(): string | undefined {
    return this.#raced;
  }
}
