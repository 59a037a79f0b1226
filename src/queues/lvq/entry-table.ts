/**
 * The per-message state of a conflating store, indexed by handle (a log offset). Handles grow
 * by one per publish, so they are kept in pages of 128 consecutive handles, each page a set of
 * parallel arrays (message, key, arrival time, body bytes, flags): storing or dropping a message allocates
 * nothing and touches no hash table, except once per 128 handles when a page comes or goes.
 * A page is released when its last message goes (the last page when the next one comes), so
 * memory follows the live messages, not the messages ever published. A few released pages are
 * kept for reuse: under steady conflation a page empties about as often as a new one is needed.
 *
 * Page numbers are also listed in ascending order, so the table can be read in handle order
 * (`next`): it is the store's FIFO, and a publish appends to no other list.
 */
import type { StoredMessage } from '../../message/types.js';
import type { LvqKey } from './key.js';

const PAGE_SIZE = 128;
/** `handle & SLOT_MASK` is the slot: ToInt32 keeps the low bits even past 2^32. */
const SLOT_MASK = PAGE_SIZE - 1;
/** Released pages kept for reuse (a free page holds no references: only zeroed flags). */
const SPARE_PAGES = 4;

function pageOf(handle: number): number {
  return Math.floor(handle / PAGE_SIZE);
}

class Page {
  readonly messages: (StoredMessage | undefined)[] = new Array(PAGE_SIZE).fill(undefined);
  readonly keys: (LvqKey | undefined)[] = new Array(PAGE_SIZE).fill(undefined);
  // The numeric columns share one buffer: one allocation per page instead of three.
  readonly #numbers = new ArrayBuffer(PAGE_SIZE * 13);
  readonly timestamps = new Float64Array(this.#numbers, 0, PAGE_SIZE);
  /** Body bytes, so counting a message in or out never reads the message itself. */
  readonly bytes = new Uint32Array(this.#numbers, PAGE_SIZE * 8, PAGE_SIZE);
  /** 0 for a free slot; otherwise the store's state bits (never 0 for a stored message). */
  readonly flags = new Uint8Array(this.#numbers, PAGE_SIZE * 12, PAGE_SIZE);
  live = 0;
}

export class EntryTable {
  readonly #pages = new Map<number, Page>();
  readonly #spare: Page[] = [];
  /**
   * Page numbers in ascending order (pages are made in handle order), released ones among them
   * until there are as many of those as of the others.
   */
  readonly #order: number[] = [];
  #released = 0;
  /** The page added last (where new handles go) and the other page looked up last: a publish
   * touches the new handle's page and the page of the value it replaces. The latter may be a
   * page that is gone (`#cached` undefined), so looking up the handles of a released page one
   * by one, as a browser's cursor does, costs no hash lookup each. */
  #tailNumber = -1;
  #tail: Page | undefined;
  #cachedNumber = -1;
  #cached: Page | undefined;
  #size = 0;

  /** Messages stored. */
  get size(): number {
    return this.#size;
  }

  /** Stores a message under a new handle. `flags` must not be 0. */
  add(
    handle: number,
    message: StoredMessage,
    key: LvqKey | undefined,
    timestamp: number,
    flags: number,
  ): void {
    const number = pageOf(handle);
    let page = this.#page(number);
    if (page === undefined) {
      // A new last page: handles only grow, so no page comes back once released.
      const tail = this.#tail;
      if (tail !== undefined && tail.live === 0) this.#release(this.#tailNumber, tail);
      page = this.#spare.pop() ?? new Page();
      this.#pages.set(number, page);
      this.#order.push(number);
      this.#tailNumber = number;
      this.#tail = page;
      if (this.#cachedNumber === number) this.#cached = page;
    }
    const slot = handle & SLOT_MASK;
    page.messages[slot] = message;
    page.keys[slot] = key;
    page.timestamps[slot] = timestamp;
    page.bytes[slot] = message.body.length;
    page.flags[slot] = flags;
    page.live++;
    this.#size++;
  }

  /** The state bits of a handle; 0 when it is not stored. */
  flags(handle: number): number {
    const page = this.#page(pageOf(handle));
    return page === undefined ? 0 : page.flags[handle & SLOT_MASK]!;
  }

  /** Changes the state bits of a stored handle (`flags` must not be 0: use `delete`). */
  setFlags(handle: number, flags: number): void {
    this.#page(pageOf(handle))!.flags[handle & SLOT_MASK] = flags;
  }

  /** The message of a stored handle, or undefined. */
  message(handle: number): StoredMessage | undefined {
    return this.#page(pageOf(handle))?.messages[handle & SLOT_MASK];
  }

  /** The body bytes of a stored handle. */
  bytes(handle: number): number {
    return this.#page(pageOf(handle))!.bytes[handle & SLOT_MASK]!;
  }

  /** The key of a stored handle (undefined for a keyless message). */
  key(handle: number): LvqKey | undefined {
    return this.#page(pageOf(handle))?.keys[handle & SLOT_MASK];
  }

  /** The arrival time of a stored handle, or NaN. */
  timestamp(handle: number): number {
    const page = this.#page(pageOf(handle));
    return page === undefined ? Number.NaN : page.timestamps[handle & SLOT_MASK]!;
  }

  /** Forgets a stored handle and returns its body bytes (0 when it was not stored). */
  delete(handle: number): number {
    const number = pageOf(handle);
    const page = this.#page(number);
    const slot = handle & SLOT_MASK;
    if (page === undefined || page.flags[slot] === 0) return 0;
    const bytes = page.bytes[slot]!;
    page.messages[slot] = undefined;
    page.keys[slot] = undefined;
    page.flags[slot] = 0;
    this.#size--;
    // The last page stays while empty: a queue that is drained as fast as it is filled would
    // otherwise release and remake it for every message.
    if (--page.live === 0 && page !== this.#tail) this.#release(number, page);
    return bytes;
  }

  /** Lets go of an empty page (never the last one while it is the last one). */
  #release(number: number, page: Page): void {
    this.#pages.delete(number);
    if (this.#spare.length < SPARE_PAGES) this.#spare.push(page);
    if (++this.#released * 2 > this.#order.length) this.#dropReleased();
    if (this.#cachedNumber === number) this.#cached = undefined;
  }

  /**
   * The first stored handle at or after `from`, or -1. A free slot costs a byte compare to skip,
   * a released page a binary search.
   */
  next(from: number): number {
    let number = pageOf(from);
    let slot = from & SLOT_MASK;
    for (;;) {
      const flags = this.#page(number)?.flags;
      if (flags !== undefined) {
        for (; slot < PAGE_SIZE; slot++) if (flags[slot] !== 0) return number * PAGE_SIZE + slot;
      }
      number = this.#pageAfter(number);
      if (number < 0) return -1;
      slot = 0;
    }
  }

  /** The number of the first page after page `number`, or -1. */
  #pageAfter(number: number): number {
    const order = this.#order;
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (order[mid]! <= number) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < order.length; lo++) if (this.#pages.has(order[lo]!)) return order[lo]!;
    return -1;
  }

  /** Drops the released pages from `#order`: amortized O(1) per page. */
  #dropReleased(): void {
    const order = this.#order;
    let n = 0;
    for (const number of order) if (this.#pages.has(number)) order[n++] = number;
    order.length = n;
    this.#released = 0;
  }

  #page(number: number): Page | undefined {
    if (number === this.#tailNumber) return this.#tail;
    if (number === this.#cachedNumber) return this.#cached;
    const page = this.#pages.get(number);
    this.#cachedNumber = number;
    this.#cached = page;
    return page;
  }
}
