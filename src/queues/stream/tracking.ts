import type { MetaStore } from '../../storage/types.js';

const KEY_PREFIX = 'stream.offset.';

/** A stored offset found past the end of the stream on open, and where it now points. */
export interface ClampedOffset {
  readonly tag: string;
  readonly stored: number;
  readonly clamped: number;
}

/** The offsets stored per consumer tag in a stream's metadata, in tag order. */
export function storedOffsets(meta: MetaStore): { tag: string; offset: number }[] {
  const out: { tag: string; offset: number }[] = [];
  for (const [key, value] of meta.entries(KEY_PREFIX)) {
    if (typeof value === 'number') out.push({ tag: key.slice(KEY_PREFIX.length), offset: value });
  }
  return out;
}

/**
 * Server-side offset tracking: one entry per consumer tag in the stream's metadata space,
 * holding the offset the consumer resumes from. Writes go to the in-memory MetaStore (durable in
 * the background), so storing on every ack is cheap; an unchanged value is not rewritten.
 *
 * A stored offset never passes what is durable in the log: the metadata is written apart from
 * the log, and an offset stored past the messages a crash then cut (or a failed write never
 * stored) would make the consumer skip the messages published at those offsets after a
 * restart. Progress past the durable end is held in memory (and read back from there) until
 * the log's sync covers it.
 */
export class OffsetStore {
  readonly #meta: MetaStore;
  /** Every message below this offset is durable. */
  #durableEnd: number;
  /** Offsets stored past `#durableEnd`, by tag: written once durable. */
  readonly #held = new Map<string, number>();

  constructor(meta: MetaStore, durableEnd: number) {
    this.#meta = meta;
    this.#durableEnd = durableEnd;
  }

  /** The stored offset of `tag` (held progress included), or undefined. */
  get(tag: string): number | undefined {
    const held = this.#held.get(tag);
    if (held !== undefined) return held;
    const value = this.#meta.get(KEY_PREFIX + tag);
    return typeof value === 'number' ? value : undefined;
  }

  /**
   * Stores `offset` for `tag` (one entry per tag: the newest value replaces the older). What
   * passes the durable end is written up to it now, and whole once durable.
   */
  set(tag: string, offset: number): void {
    if (offset > this.#durableEnd) this.#held.set(tag, offset);
    else this.#held.delete(tag);
    this.#write(tag, Math.min(offset, this.#durableEnd));
  }

  /** Every message below `end` is durable now: held offsets are written up to it. */
  advance(end: number): void {
    if (end <= this.#durableEnd) return;
    this.#durableEnd = end;
    for (const [tag, offset] of this.#held) {
      if (offset <= end) this.#held.delete(tag);
      this.#write(tag, Math.min(offset, end));
    }
  }

  /**
   * Moves every stored offset past `end` (the stream's next offset on open) back to `end` and
   * returns them: a crash before this rule held, or damage, left them there.
   */
  clampTo(end: number): ClampedOffset[] {
    const clamped: ClampedOffset[] = [];
    for (const [key, value] of this.#meta.entries(KEY_PREFIX)) {
      if (typeof value === 'number' && value > end) {
        clamped.push({ tag: key.slice(KEY_PREFIX.length), stored: value, clamped: end });
      }
    }
    for (const { tag } of clamped) this.#meta.set(KEY_PREFIX + tag, end);
    return clamped;
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
    for (const [tag, offset] of this.#held) if (offset < firstOffset) this.#held.delete(tag);
  }

  /** Forgets every stored offset (the stream was deleted or purged of everything). */
  clear(): void {
    this.dropBefore(Number.POSITIVE_INFINITY);
  }

  #write(tag: string, offset: number): void {
    const key = KEY_PREFIX + tag;
    if (this.#meta.get(key) !== offset) this.#meta.set(key, offset);
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
