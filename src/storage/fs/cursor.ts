/**
 * A forward cursor over an fs log. It walks frames by file position with its own read window,
 * so N cursors are N independent sequential readers; between `next()` calls it holds only a
 * segment, a position and the next offset it wants. If its segment is dropped or rewritten by
 * compaction under it, it finds its place again from that offset through the sparse index.
 *
 * `next()` only walks: the record and timestamp are decoded from the window when first read,
 * so a reader that skips records (by offset or timestamp) pays nothing for their contents. They
 * stay readable until the next `next()` or `seek()` (after which they are undefined and NaN until
 * a record is found). A frame still in the log's write buffer is decoded at once, since later
 * appends reuse that buffer. A record that cannot be decoded throws MQLITE_CORRUPTION when
 * `record` is read.
 */
import type { LogCursor } from '../types.js';
import { FILE_HEADER, frameDelta, frameTimestamp } from './frame.js';
import { FrameReader, type FrameSource } from './reader.js';
import type { Segment } from './segment.js';

/** What a cursor needs of its log (the log implements it; the cursor never imports the log). */
export interface CursorSource<T> extends FrameSource {
  /** Throws if the log is closed or failed. */
  check(): void;
  /** The retained segments, oldest first. */
  readonly segs: readonly Segment[];
  /** The segment after `seg`, or undefined when `seg` is the active one. */
  segmentAfter(seg: Segment): Segment | undefined;
  /** Decodes the record of the frame at `at` in `bytes`. */
  decodeAt(seg: Segment, bytes: Uint8Array, at: number, length: number): T;
}

/** Read window of a cursor: big enough that a sequential read costs few system calls. */
const WINDOW = 256 * 1024;

// Bits of `#frame`: a current frame exists; its record / timestamp are still to be decoded.
const CURRENT = 1;
const RECORD = 2;
const TIMESTAMP = 4;

export class FsCursor<T> implements LogCursor<T> {
  offset = 0;

  readonly #log: CursorSource<T>;
  #reader: FrameReader | undefined;
  /** The segment and position of the next frame, or undefined to look them up from `#want`. */
  #seg: Segment | undefined;
  #generation = 0;
  #pos = 0;
  #slot = 0;
  /** The next offset this cursor may yield. */
  #want: number;

  /** The current frame (the reader's): CURRENT, RECORD and TIMESTAMP bits. */
  #frame = 0;
  #record: T | undefined;
  #timestamp = Number.NaN;

  constructor(log: CursorSource<T>, offset: number) {
    this.#log = log;
    this.#want = offset;
  }

  get record(): T {
    const frame = this.#frame;
    if (frame & RECORD) {
      const reader = this.#reader!;
      this.#record = this.#log.decodeAt(this.#seg!, reader.bytes, reader.at, reader.length);
      this.#frame = frame & ~RECORD;
    }
    return (frame & CURRENT ? this.#record : undefined) as T;
  }

  get timestamp(): number {
    const frame = this.#frame;
    if (frame & TIMESTAMP) {
      this.#timestamp = frameTimestamp(this.#reader!.bytes, this.#reader!.at);
      this.#frame = frame & ~TIMESTAMP;
    }
    return frame & CURRENT ? this.#timestamp : Number.NaN;
  }

  seek(offset: number): void {
    this.#log.check();
    this.#frame = 0;
    this.#want = offset;
    this.#seg = undefined;
  }

  next(): boolean {
    const log = this.#log;
    log.check();
    this.#frame = 0; // the reader is about to move on
    for (;;) {
      let seg = this.#seg;
      if (!seg || seg.dropped || seg.generation !== this.#generation) seg = this.#position();
      const reader = this.#reader!;
      if (!reader.read(seg, this.#pos, true)) {
        const after = log.segmentAfter(seg);
        if (!after) return false;
        this.#enter(after, FILE_HEADER, 0);
        continue;
      }
      const bytes = reader.bytes;
      const at = reader.at;
      const slot = this.#slot++;
      this.#pos += reader.length;
      // A dense segment holds offset firstOffset + slot at each slot; a compacted one says.
      const offset = seg.firstOffset + (seg.present ? frameDelta(bytes, at) : slot);
      if (offset < this.#want || (seg.deletedCount !== 0 && seg.isDeletedSlot(slot))) continue;
      this.#want = offset + 1;
      this.offset = offset;
      this.#frame = CURRENT | RECORD | TIMESTAMP;
      if (reader.inBatch) {
        // Later appends reuse the write buffer: read the frame while it is there.
        void this.record;
        void this.timestamp;
      }
      return true;
    }
  }

  /** Finds the segment and position from which `#want` is reached. */
  #position(): Segment {
    this.#reader ??= new FrameReader(this.#log, WINDOW);
    const segs = this.#log.segs;
    const want = Math.max(this.#want, segs[0]!.firstOffset);
    this.#want = Number.isNaN(want) ? segs[0]!.firstOffset : want;
    let lo = 0;
    let hi = segs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (segs[mid]!.lastOffset < this.#want) lo = mid + 1;
      else hi = mid;
    }
    const seg = segs[lo]!;
    if (seg.sparseCount === 0) {
      this.#enter(seg, FILE_HEADER, 0);
    } else {
      const entry = seg.sparseBefore(seg.slotAtOrAfter(this.#want));
      this.#enter(seg, seg.sparsePos[entry]!, seg.sparseSlot[entry]!);
    }
    return seg;
  }

  #enter(seg: Segment, pos: number, slot: number): void {
    this.#seg = seg;
    this.#generation = seg.generation;
    this.#pos = pos;
    this.#slot = slot;
  }
}
