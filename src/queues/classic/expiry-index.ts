/**
 * A min-heap of (expiry time, handle) pairs in two growable Float64Arrays: no object per entry, so
 * indexing a message with a TTL costs 16 bytes. Entries are never removed from the middle; a
 * message settled before its expiry is left in and skipped when it surfaces (the caller checks
 * whether the handle is still ready).
 *
 * Entries due at the same time come out in queue order (by the rank the queue gives), however
 * they were pushed: messages expiring together are dead-lettered in the order they stand.
 *
 * With one queue-wide TTL, arrival order is expiry order and `push` appends at the bottom
 * without sifting, so the common case is O(1).
 */
export class ExpiryIndex {
  #at: Float64Array;
  #handle: Float64Array;
  #size = 0;
  /** Orders handles that expire at the same time: queue order, whatever order they came in. */
  readonly #rank: (handle: number) => number;

  /** `rank` sorts handles in queue order (default: the handle itself). */
  constructor(rank: (handle: number) => number = (handle) => handle, capacity = 64) {
    this.#at = new Float64Array(capacity);
    this.#handle = new Float64Array(capacity);
    this.#rank = rank;
  }

  /** Entries held, stale ones included. */
  get size(): number {
    return this.#size;
  }

  /** The earliest expiry time, or Infinity when empty. */
  get nextAt(): number {
    return this.#size > 0 ? this.#at[0]! : Number.POSITIVE_INFINITY;
  }

  /** The handle of the earliest entry (only valid when `size > 0`). */
  get nextHandle(): number {
    return this.#handle[0]!;
  }

  push(at: number, handle: number): void {
    if (this.#size === this.#at.length) this.#grow();
    const heapAt = this.#at;
    const heapHandle = this.#handle;
    let i = this.#size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heapAt[parent]!;
      if (!this.#before(at, handle, p, heapHandle[parent]!)) break;
      heapAt[i] = p;
      heapHandle[i] = heapHandle[parent]!;
      i = parent;
    }
    heapAt[i] = at;
    heapHandle[i] = handle;
  }

  /** Removes the earliest entry. */
  pop(): void {
    const n = --this.#size;
    if (n <= 0) {
      this.#size = Math.max(n, 0);
      return;
    }
    const heapAt = this.#at;
    const heapHandle = this.#handle;
    const at = heapAt[n]!;
    const handle = heapHandle[n]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (
        right < n &&
        this.#before(heapAt[right]!, heapHandle[right]!, heapAt[child]!, heapHandle[child]!)
      ) {
        child = right;
      }
      if (!this.#before(heapAt[child]!, heapHandle[child]!, at, handle)) break;
      heapAt[i] = heapAt[child]!;
      heapHandle[i] = heapHandle[child]!;
      i = child;
    }
    heapAt[i] = at;
    heapHandle[i] = handle;
  }

  /**
   * Drops every entry whose handle `keep` rejects and restores heap order: bounds the stale
   * entries left by messages consumed long before their expiry. O(n).
   */
  compact(keep: (handle: number) => boolean): void {
    const heapAt = this.#at;
    const heapHandle = this.#handle;
    let n = 0;
    for (let i = 0; i < this.#size; i++) {
      const handle = heapHandle[i]!;
      if (!keep(handle)) continue;
      heapAt[n] = heapAt[i]!;
      heapHandle[n++] = handle;
    }
    this.#size = 0;
    // Re-pushing in place rebuilds the heap; entries already in order stay put.
    for (let i = 0; i < n; i++) this.push(heapAt[i]!, heapHandle[i]!);
  }

  clear(): void {
    this.#size = 0;
    if (this.#at.length > 1024) {
      this.#at = new Float64Array(64);
      this.#handle = new Float64Array(64);
    }
  }

  /** Whether entry (at, handle) comes out before entry (otherAt, other). */
  #before(at: number, handle: number, otherAt: number, other: number): boolean {
    if (at !== otherAt) return at < otherAt;
    return this.#rank(handle) < this.#rank(other);
  }

  #grow(): void {
    const at = new Float64Array(this.#at.length * 2);
    const handle = new Float64Array(this.#at.length * 2);
    at.set(this.#at);
    handle.set(this.#handle);
    this.#at = at;
    this.#handle = handle;
  }
}
