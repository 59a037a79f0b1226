/**
 * Rates of counters, sampled on the server's clock: each read at least `interval` after the
 * last sample takes a new one, and the rate is the change between the two per second. A
 * counter read for the first time has rate 0, as RabbitMQ's first sample does.
 */
import type { Clock } from '../clock.js';

/** RabbitMQ's default sample interval for rates: 5 seconds. */
export const SAMPLE_INTERVAL_MS = 5_000;

interface Sample {
  at: number;
  values: Record<string, number>;
  rates: Record<string, number>;
}

export class Rates {
  readonly #clock: Clock;
  readonly #interval: number;
  readonly #samples = new WeakMap<object, Sample>();

  constructor(clock: Clock, interval = SAMPLE_INTERVAL_MS) {
    this.#clock = clock;
    this.#interval = interval;
  }

  /** The per-second rate of each numeric field of `counters`, by field. */
  of(counters: object): Readonly<Record<string, number>> {
    const now = this.#clock.now();
    const values = { ...(counters as Record<string, number>) };
    const sample = this.#samples.get(counters);
    if (sample === undefined) {
      const rates = Object.fromEntries(Object.keys(values).map((k) => [k, 0]));
      this.#samples.set(counters, { at: now, values, rates });
      return rates;
    }
    const elapsed = now - sample.at;
    if (elapsed >= this.#interval) {
      const rates: Record<string, number> = {};
      for (const [key, value] of Object.entries(values)) {
        rates[key] = round(((value - (sample.values[key] ?? 0)) * 1000) / elapsed);
      }
      sample.at = now;
      sample.values = values;
      sample.rates = rates;
    }
    return sample.rates;
  }
}

function round(rate: number): number {
  return Math.round(rate * 10) / 10;
}
