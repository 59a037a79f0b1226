/**
 * A min-heap of (expiry time, handle) pairs in two growable Float64Arrays: no object per entry, so
 * indexing a message with a TTL costs 16 bytes. Entries are never removed from the middle; a
 * message settled before its expiry is left in and skipped when it surfaces (the caller checks
 * whether the handle is still ready).
 *
 * With one queue-wide TTL, arrival order is expiry order and `push` appends at the bottom
 * without sifting, so the common case is O(1).
 */
export class ExpiryIndex {
  #at: Float64Array;
  #handle: Float64Array;
  #size = 0;

  constructor(capacity = 64) {
    this.#at = new Float64Array(capacity);
    this.#handle = new Float64Array(capacity);
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
      if (p <= at) break;
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
      if (child + 1 < n && heapAt[child + 1]! < heapAt[child]!) child++;
      if (heapAt[child]! >= at) break;
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

  #grow(): void {
    const at = new Float64Array(this.#at.length * 2);
    const handle = new Float64Array(this.#at.length * 2);
    at.set(this.#at);
    handle.set(this.#handle);
    this.#at = at;
    this.#handle = handle;
  }
}
