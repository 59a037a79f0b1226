/**
 * Rates of counters and depths, sampled on the server's clock: each read at least `interval`
 * after the last sample takes a new one, and the rate is the change between the two per second,
 * as RabbitMQ's `*_details.rate` over its sample interval. A value read for the first time has
 * rate 0, as RabbitMQ's first sample does.
 */
import type { Clock } from '../clock.js';

/** RabbitMQ's default sample interval for rates: 5 seconds. */
export const SAMPLE_INTERVAL_MS = 5_000;

/** Samples by name are forgotten once unread for this many intervals (a deleted queue's). */
const KEPT_INTERVALS = 12;

interface Sample {
  at: number;
  /** When it was last read, to forget the samples no one reads any more. */
  read: number;
  values: Readonly<Record<string, number>>;
  rates: Readonly<Record<string, number>>;
}

export class Rates {
  readonly #clock: Clock;
  readonly #interval: number;
  readonly #samples = new WeakMap<object, Sample>();
  readonly #named = new Map<string, Sample>();
  #swept: number;

  constructor(clock: Clock, interval = SAMPLE_INTERVAL_MS) {
    this.#clock = clock;
    this.#interval = interval;
    this.#swept = clock.now();
  }

  /** The per-second rate of each numeric field of `counters` (an object kept while counting). */
  of(counters: object): Readonly<Record<string, number>> {
    const values = { ...(counters as Record<string, number>) };
    const now = this.#clock.now();
    const sample = this.#samples.get(counters);
    if (sample !== undefined) return this.#sampled(sample, values, now);
    this.#samples.set(counters, first(values, now));
    return zero(values);
  }

  /**
   * The per-second rate of each of `values`, read now under `name` (a queue's depths, made anew
   * at each read).
   */
  named(name: string, values: Readonly<Record<string, number>>): Readonly<Record<string, number>> {
    const now = this.#clock.now();
    this.#sweep(now);
    const sample = this.#named.get(name);
    if (sample !== undefined) return this.#sampled(sample, values, now);
    this.#named.set(name, first(values, now));
    return zero(values);
  }

  #sampled(
    sample: Sample,
    values: Readonly<Record<string, number>>,
    now: number,
  ): Readonly<Record<string, number>> {
    sample.read = now;
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

  #sweep(now: number): void {
    const oldest = now - KEPT_INTERVALS * this.#interval;
    if (this.#swept > oldest) return;
    this.#swept = now;
    for (const [name, sample] of this.#named) if (sample.read < oldest) this.#named.delete(name);
  }
}

function first(values: Readonly<Record<string, number>>, now: number): Sample {
  return { at: now, read: now, values, rates: zero(values) };
}

function zero(values: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.keys(values).map((k) => [k, 0]));
}

function round(rate: number): number {
  return Math.round(rate * 10) / 10;
}
