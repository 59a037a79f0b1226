import type { MetaStore } from '../../storage/types.js';

const KEY_PREFIX = 'stream.offset.';

/**
 * Server-side offset tracking: one entry per consumer tag in the stream's metadata space,
 * holding the offset the consumer resumes from. Writes go to the in-memory MetaStore (durable in
 * the background), so storing on every ack is cheap; an unchanged value is not rewritten.
 */
export class OffsetStore {
  readonly #meta: MetaStore;

  constructor(meta: MetaStore) {
    this.#meta = meta;
  }

  /** The stored offset of `tag`, or undefined. */
  get(tag: string): number | undefined {
    const value = this.#meta.get(KEY_PREFIX + tag);
    return typeof value === 'number' ? value : undefined;
  }

  /** Stores `offset` for `tag` (one entry per tag: the newest value replaces the older). */
  set(tag: string, offset: number): void {
    const key = KEY_PREFIX + tag;
    if (this.#meta.get(key) !== offset) this.#meta.set(key, offset);
  }

  /** The highest stored offset, or undefined when none is stored. */
  highest(): number | undefined {
    let highest: number | undefined;
    for (const [, value] of this.#meta.entries(KEY_PREFIX)) {
      if (typeof value === 'number' && (highest === undefined || value > highest)) highest = value;
    }
    return highest;
  }

  /** Forgets every stored offset that points before `firstOffset` (its messages are gone). */
  dropBefore(firstOffset: number): void {
    const stale: string[] = [];
    for (const [key, value] of this.#meta.entries(KEY_PREFIX)) {
      if (typeof value !== 'number' || value < firstOffset) stale.push(key);
    }
    for (const key of stale) this.#meta.delete(key);
  }

  /** Forgets every stored offset (the stream was deleted or purged of everything). */
  clear(): void {
    this.dropBefore(Number.POSITIVE_INFINITY);
  }
}

/**
 * The offsets a consumer was given and has not settled, to find the first unacknowledged one.
 * Offsets arrive in increasing order (a redelivery reuses an offset already held), and acks
 * mostly come in order, so this is a queue whose head advances past settled entries: O(1)
 * amortized per ack, O(log n) for an out-of-order one.
 */
export class UnsettledOffsets {
  // Settled entries are negated in place until the head moves past them.
  #offsets: number[] = [];
  #head = 0;

  /** Number of entries held, settled ones not yet compacted included. */
  get size(): number {
    return this.#offsets.length - this.#head;
  }

  /** Records a delivered offset; must be greater than every offset added before. */
  add(offset: number): void {
    this.#offsets.push(offset);
  }

  /** Marks an offset settled (acked, or rejected without requeue). Unknown offsets are ignored. */
  settle(offset: number): void {
    const offsets = this.#offsets;
    if (offsets[this.#head] === offset) {
      this.#head++;
      this.#advance();
      return;
    }
    let lo = this.#head;
    let hi = offsets.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const value = Math.abs(offsets[mid]!);
      if (value === offset) {
        offsets[mid] = -offset;
        return;
      }
      if (value < offset) lo = mid + 1;
      else hi = mid - 1;
    }
  }

  /** The lowest unsettled offset, or undefined when everything is settled. */
  first(): number | undefined {
    return this.#head < this.#offsets.length ? this.#offsets[this.#head] : undefined;
  }

  #advance(): void {
    const offsets = this.#offsets;
    while (this.#head < offsets.length && offsets[this.#head]! < 0) this.#head++;
    // Compact rarely: resizing the array on every ack would cost more than the ack.
    if (this.#head < 1024) return;
    if (this.#head === offsets.length) {
      offsets.length = 0;
      this.#head = 0;
    } else if (this.#head * 2 >= offsets.length) {
      offsets.splice(0, this.#head);
      this.#head = 0;
    }
  }
}
