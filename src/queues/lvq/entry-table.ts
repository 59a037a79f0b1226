/**
 * The per-message state of a conflating store, indexed by handle (a log offset). Handles grow
 * by one per publish, so they are kept in pages of 128 consecutive handles, each page a set of
 * parallel arrays (message, key, arrival time, body bytes, flags): storing or dropping a message allocates
 * nothing and touches no hash table, except once per 128 handles when a page comes or goes.
 * A page is released when its last message goes, so memory follows the live messages, not the
 * messages ever published.
 */
import type { StoredMessage } from '../../message/types.js';
import type { LvqKey } from './key.js';

const PAGE_SIZE = 128;
/** `handle & SLOT_MASK` is the slot: ToInt32 keeps the low bits even past 2^32. */
const SLOT_MASK = PAGE_SIZE - 1;

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
  /** The page added last (where new handles go) and the other page looked up last: a publish
   * touches the new handle's page and the page of the value it replaces. */
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
      page = new Page();
      this.#pages.set(number, page);
      this.#tailNumber = number;
      this.#tail = page;
    }
    const slot = handle & SLOT_MASK;
    page.messages[slot] = message;
    page.keys[slot] = key;
    page.timestamps[slot] = timestamp;
    page.bytes[slot] = message.body.byteLength;
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

  /** Forgets a stored handle. */
  delete(handle: number): void {
    const number = pageOf(handle);
    const page = this.#page(number);
    const slot = handle & SLOT_MASK;
    if (page === undefined || page.flags[slot] === 0) return;
    page.messages[slot] = undefined;
    page.keys[slot] = undefined;
    page.flags[slot] = 0;
    this.#size--;
    if (--page.live === 0) {
      this.#pages.delete(number);
      if (this.#cachedNumber === number) {
        this.#cachedNumber = -1;
        this.#cached = undefined;
      }
      if (this.#tailNumber === number) {
        this.#tailNumber = -1;
        this.#tail = undefined;
      }
    }
  }

  #page(number: number): Page | undefined {
    if (number === this.#tailNumber) return this.#tail;
    if (number === this.#cachedNumber) return this.#cached;
    const page = this.#pages.get(number);
    if (page !== undefined) {
      this.#cachedNumber = number;
      this.#cached = page;
    }
    return page;
  }
}
