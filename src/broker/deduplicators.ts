/**
 * The deduplication caches of a broker's exchanges and queues (`x-message-deduplication`), one
 * per declaration: a cache belongs to the object that stands for the exchange or queue as
 * declared, so a deleted and declared-again one starts empty, and nothing outlives its owner.
 */
import type { Clock } from '../clock.js';
import { Deduplicator, deduplicationOptions } from '../exchanges/deduplication.js';
import type { FieldTable } from '../message/types.js';
import { emptyTable } from '../table.js';

export class Deduplicators {
  readonly #clock: Clock;
  /** Owner → its cache, or null when it does not deduplicate. */
  readonly #caches = new WeakMap<object, Deduplicator | null>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** The cache of `owner`, declared with `args`; undefined when it does not deduplicate. */
  of(owner: object, args: Readonly<FieldTable>): Deduplicator | undefined {
    let cache = this.#caches.get(owner);
    if (cache === undefined) {
      const options = deduplicationOptions(args);
      cache = options ? new Deduplicator(options, this.#clock) : null;
      this.#caches.set(owner, cache);
    }
    return cache ?? undefined;
  }

  /** Duplicates dropped, by name, of each `[name, owner, args]` that deduplicates. */
  dropped(
    owners: Iterable<readonly [string, object, Readonly<FieldTable>]>,
  ): Record<string, number> {
    const out = emptyTable<number>();
    for (const [name, owner, args] of owners) {
      const cache = this.of(owner, args);
      if (cache) out[name] = cache.dropped;
    }
    return out;
  }
}
