/**
 * The log of a priority level on non-persistent storage. A log of `StoredMessage`s kept as
 * objects would cost three objects per message (the message, its body view, its properties):
 * about 200 bytes beyond the body. The memory adapter's own packing (what a stream uses) copies
 * each body and keeps an acked message's bytes until its whole segment goes, which suits an
 * append-only log, not a queue that acks one message at a time. This log keeps messages packed
 * in pages of {@link PAGE_SIZE} slots of parallel arrays instead: a reference to the body's
 * buffer with offset and length, the arrival time, and the index of its envelope (properties,
 * exchange and routing key, listed once per run of messages that share them; properties that only
 * carry a priority are shared). That is about 27 bytes per message, and storing one allocates
 * nothing. Every byte kept is memory the process must first touch, which costs more than the
 * rest of an enqueue where page faults are slow (virtual machines).
 *
 * Each page is one record of an underlying memory log, so a queue reopened on the same memory
 * storage finds its messages; a page whose messages are all deleted is marked deleted there and
 * released. Messages are materialized as `StoredMessage`s when read (`get`, a cursor's
 * `record`): one short-lived object per delivery, and a body view only if the body is read.
 *
 * It has the offsets, cursor and delete marks of a `Log<StoredMessage>` (what a level needs):
 * message `n` of page record `p` has offset `(p - 1) * PAGE_SIZE + n + 1`, gapless from 1.
 */
import { sharedProperties } from '../../message/normalize.js';
import { PackedMessage } from '../../message/packed-message.js';
import type { MessageProperties, StoredMessage } from '../../message/types.js';
import type { Log, LogCursor, RecordCodec } from '../../storage/types.js';

/** Messages per page. */
export const PAGE_SIZE = 512;

/**
 * Bytes of the numeric columns per slot: timestamp (8), body offset (4) and length (4), envelope
 * index (2), deleted (1).
 */
const NUMBER_BYTES = 19;
/**
 * Most pages one chunk of storage holds. Chunks double from one page up to this: a short queue
 * stays small, and the body-buffer array of a full chunk (32 × 512 slots of 8 bytes) is beyond
 * V8's largest regular object, so it is allocated outside the young generation and scavenges
 * never copy it. Copying young pages was most of the time an enqueue spent in GC.
 */
const MAX_CHUNK_PAGES = 32;

/**
 * Storage for a run of consecutive pages: one array of body buffers and one buffer of numbers.
 * It lives while any of its pages does, so a message left at the head of a level holds its chunk
 * (at most {@link MAX_CHUNK_PAGES} pages, about 440 KB): bounded per level, and the price of
 * allocating pages in bulk.
 */
class Chunk {
  readonly buffers: (ArrayBufferLike | undefined)[];
  readonly numbers: ArrayBuffer;
  readonly pages: number;
  /** Pages handed out. */
  used = 0;

  constructor(pages: number) {
    this.pages = pages;
    // Holey is fine: a slot is read only after it was written.
    this.buffers = new Array(pages * PAGE_SIZE);
    this.numbers = new ArrayBuffer(pages * PAGE_SIZE * NUMBER_BYTES);
  }
}

/**
 * One page of messages; also the record of the underlying log, so it outlives a queue close.
 *
 * A message's properties, exchange and routing key are an *envelope*, which consecutive messages
 * usually share (same route, properties that only carry a priority): the page lists each run's
 * envelope once and a slot keeps its index. Envelopes go with the page; a deleted slot releases
 * its body at once.
 */
export class Page {
  /** Slot `n`'s body buffer is `buffers[base + n]` (the array is shared with the chunk). */
  readonly buffers: (ArrayBufferLike | undefined)[];
  readonly base: number;
  readonly timestamps: Float64Array;
  readonly byteOffsets: Uint32Array;
  readonly byteLengths: Uint32Array;
  /** Slot `n`'s envelope is `envelopes[3 * envelopeOf[n] + k]`: properties, exchange, key. */
  readonly envelopeOf: Uint16Array;
  readonly envelopes: (Readonly<MessageProperties> | string)[] = [];
  /** 1 for a deleted slot. */
  readonly deleted: Uint8Array;
  /** Slots written. */
  count = 0;
  /** Slots written and not deleted. */
  live = 0;

  /** The next page of `chunk`. */
  constructor(chunk: Chunk) {
    const index = chunk.used++;
    this.buffers = chunk.buffers;
    this.base = index * PAGE_SIZE;
    const numbers = chunk.numbers;
    const at = index * PAGE_SIZE * NUMBER_BYTES;
    this.timestamps = new Float64Array(numbers, at, PAGE_SIZE);
    this.byteOffsets = new Uint32Array(numbers, at + PAGE_SIZE * 8, PAGE_SIZE);
    this.byteLengths = new Uint32Array(numbers, at + PAGE_SIZE * 12, PAGE_SIZE);
    this.envelopeOf = new Uint16Array(numbers, at + PAGE_SIZE * 16, PAGE_SIZE);
    this.deleted = new Uint8Array(numbers, at + PAGE_SIZE * 18, PAGE_SIZE);
  }

  /** Index of the envelope of a message appended now: the last one's, or a new one. */
  envelopeIndex(properties: Readonly<MessageProperties>, exchange: string, key: string): number {
    const envelopes = this.envelopes;
    const n = envelopes.length;
    if (
      n > 0 &&
      envelopes[n - 3] === properties &&
      envelopes[n - 2] === exchange &&
      envelopes[n - 1] === key
    ) {
      return n / 3 - 1;
    }
    envelopes.push(properties, exchange, key);
    return n / 3;
  }

  /** The message in `slot`, materialized. */
  message(slot: number): PackedMessage {
    const envelopes = this.envelopes;
    const e = 3 * this.envelopeOf[slot]!;
    return new PackedMessage(
      envelopes[e] as Readonly<MessageProperties>,
      envelopes[e + 1] as string,
      envelopes[e + 2] as string,
      this.buffers[this.base + slot]!,
      this.byteOffsets[slot]!,
      this.byteLengths[slot]!,
    );
  }
}

/**
 * Codec of the underlying log of pages. Pages are counted by slots: segments roll every few
 * hundred pages.
 */
export const pageCodec: RecordCodec<Page> = {
  byteLength: () => PAGE_SIZE * 64,
  encode: () => {
    throw new TypeError('a packed log lives on memory storage only');
  },
  decode: () => {
    throw new TypeError('a packed log lives on memory storage only');
  },
};

/** A log of messages packed into pages; see the module comment. */
export class PackedLog {
  readonly #pages: Log<Page>;
  /** Retained pages from `#first` on (index = page record offset - 1 - `#base`). */
  #retained: (Page | undefined)[] = [];
  #base = 0;
  #tail: Page | undefined;
  /** Where new pages come from, and the size of the next chunk. */
  #chunk: Chunk | undefined;
  #chunkPages = 1;
  #nextOffset: number;
  #count = 0;

  /** A packed log over `pages`, a memory log opened with {@link pageCodec}. */
  constructor(pages: Log<Page>) {
    this.#pages = pages;
    this.#base = pages.firstOffset - 1;
    this.#nextOffset = (pages.nextOffset - 1) * PAGE_SIZE + 1;
    const cursor = pages.cursor(pages.firstOffset);
    while (cursor.next()) {
      const page = cursor.record;
      this.#retained[cursor.offset - 1 - this.#base] = page;
      this.#count += page.live;
      if (cursor.offset === pages.nextOffset - 1) {
        this.#tail = page;
        this.#nextOffset = (cursor.offset - 1) * PAGE_SIZE + page.count + 1;
      }
    }
  }

  /** Offset of the oldest retained message; `nextOffset` when there is none. */
  get firstOffset(): number {
    const retained = this.#retained;
    for (let i = 0; i < retained.length; i++) {
      if (retained[i] !== undefined) return (this.#base + i) * PAGE_SIZE + 1;
    }
    return this.#nextOffset;
  }

  /** Offset the next appended message gets. */
  get nextOffset(): number {
    return this.#nextOffset;
  }

  /** Messages stored and not deleted. */
  get count(): number {
    return this.#count;
  }

  append(message: StoredMessage, timestamp: number): number {
    let page = this.#tail;
    if (page === undefined || page.count === PAGE_SIZE) page = this.#newPage();
    const slot = page.count++;
    const body = message.body;
    page.buffers[page.base + slot] = body.buffer;
    page.envelopeOf[slot] = page.envelopeIndex(
      sharedProperties(message.properties),
      message.exchange,
      message.routingKey,
    );
    page.byteOffsets[slot] = body.byteOffset;
    page.byteLengths[slot] = body.length;
    page.timestamps[slot] = timestamp;
    page.live++;
    this.#count++;
    return this.#nextOffset++;
  }

  /** Nothing to flush: memory storage is as durable as it gets at once. */
  sync(): Promise<void> {
    return this.#pages.sync();
  }

  /** The message at `offset`, or undefined if deleted or never written. */
  get(offset: number): StoredMessage | undefined {
    const page = this.#pageOf(offset);
    if (page === undefined) return undefined;
    const slot = (offset - 1) % PAGE_SIZE;
    return slot < page.count && page.deleted[slot] === 0 ? page.message(slot) : undefined;
  }

  /** Arrival time of a retained message, or NaN. */
  timestampOf(offset: number): number {
    const page = this.#pageOf(offset);
    if (page === undefined) return Number.NaN;
    const slot = (offset - 1) % PAGE_SIZE;
    return slot < page.count ? page.timestamps[slot]! : Number.NaN;
  }

  isDeleted(offset: number): boolean {
    const page = this.#pageOf(offset);
    return page !== undefined && page.deleted[(offset - 1) % PAGE_SIZE] === 1;
  }

  /** Deletes a message; a page left without live messages (not the tail) is released. */
  markDeleted(offset: number): void {
    const index = Math.floor((offset - 1) / PAGE_SIZE) - this.#base;
    const page = this.#retained[index];
    if (page === undefined) return;
    const slot = (offset - 1) % PAGE_SIZE;
    if (slot >= page.count || page.deleted[slot] === 1) return;
    page.deleted[slot] = 1;
    page.buffers[page.base + slot] = undefined;
    this.#count--;
    if (--page.live === 0 && page !== this.#tail) this.#release(index);
  }

  /** A cursor whose first `next()` yields the first live message at or after `offset`. */
  cursor(offset = 1): LogCursor<StoredMessage> {
    return new PackedCursor(this, offset);
  }

  /** Deletes every message; offsets keep counting. */
  truncate(): void {
    this.#pages.truncate();
    this.#base = this.#pages.firstOffset - 1;
    this.#retained = [];
    this.#tail = undefined;
    this.#chunk = undefined;
    this.#chunkPages = 1;
    this.#count = 0;
    // Offsets never go back: the next message starts a fresh page after the last one.
    this.#nextOffset = this.#base * PAGE_SIZE + 1;
  }

  close(): Promise<void> {
    return this.#pages.close();
  }

  /** @internal Offsets below this one are in released pages (for the cursor). */
  get retainedFrom(): number {
    return this.#base * PAGE_SIZE + 1;
  }

  /** @internal The page of index `index` (offset / PAGE_SIZE), if retained (for the cursor). */
  pageAt(index: number): Page | undefined {
    return this.#retained[index - this.#base];
  }

  #pageOf(offset: number): Page | undefined {
    return this.#retained[Math.floor((offset - 1) / PAGE_SIZE) - this.#base];
  }

  #newPage(): Page {
    let chunk = this.#chunk;
    if (chunk === undefined || chunk.used === chunk.pages) {
      chunk = this.#chunk = new Chunk(this.#chunkPages);
      this.#chunkPages = Math.min(this.#chunkPages * 2, MAX_CHUNK_PAGES);
    }
    const page = new Page(chunk);
    const recordOffset = this.#pages.append(page, 0);
    // A truncated tail leaves the rest of its page unused: offsets restart at the new page.
    this.#nextOffset = (recordOffset - 1) * PAGE_SIZE + 1;
    this.#retained[recordOffset - 1 - this.#base] = page;
    this.#tail = page;
    return page;
  }

  #release(index: number): void {
    this.#retained[index] = undefined;
    this.#pages.markDeleted(this.#base + index + 1);
    // Drop released pages from the front once they make up half of the list.
    const retained = this.#retained;
    let front = 0;
    while (front < retained.length && retained[front] === undefined) front++;
    if (front > 0 && front * 2 >= retained.length) {
      retained.splice(0, front);
      this.#base += front;
    }
  }
}

/** A forward reader over a packed log; it sees messages appended after it was made. */
class PackedCursor implements LogCursor<StoredMessage> {
  offset = 0;
  timestamp = Number.NaN;
  readonly #log: PackedLog;
  /** The next candidate offset. */
  #next: number;
  #page: Page | undefined;
  #slot = 0;
  #record: StoredMessage | undefined;

  constructor(log: PackedLog, offset: number) {
    this.#log = log;
    this.#next = Math.max(1, Math.ceil(offset));
  }

  /** The current message, materialized on first read. */
  get record(): StoredMessage {
    this.#record ??= this.#page!.message(this.#slot);
    return this.#record;
  }

  next(): boolean {
    const log = this.#log;
    const end = log.nextOffset;
    let offset = Math.max(this.#next, log.retainedFrom);
    while (offset < end) {
      const index = Math.floor((offset - 1) / PAGE_SIZE);
      const page = log.pageAt(index);
      if (page === undefined) {
        offset = (index + 1) * PAGE_SIZE + 1;
        continue;
      }
      const deleted = page.deleted;
      const n = page.count;
      let slot = (offset - 1) % PAGE_SIZE;
      while (slot < n && deleted[slot] === 1) slot++;
      if (slot < n) {
        this.offset = index * PAGE_SIZE + slot + 1;
        this.timestamp = page.timestamps[slot]!;
        this.#page = page;
        this.#slot = slot;
        this.#record = undefined;
        this.#next = this.offset + 1;
        return true;
      }
      offset = (index + 1) * PAGE_SIZE + 1;
    }
    this.#next = Math.max(offset, this.#next);
    return false;
  }

  seek(offset: number): void {
    this.#next = Math.max(1, Math.ceil(offset));
  }
}
