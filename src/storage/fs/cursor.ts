/**
 * A forward cursor over an fs log. It walks frames by file position with its own read window,
 * so N cursors are N independent sequential readers; between `next()` calls it holds only a
 * segment, a position and the next offset it wants. If its segment is dropped or rewritten by
 * compaction under it, it finds its place again from that offset through the sparse index.
 *
 * `next()` only walks: the record and timestamp are decoded from the window when first read,
 * so a reader that skips records (by offset or timestamp) pays nothing for their contents. A
 * frame still in the log's write buffer is decoded at once, since later appends reuse that
 * buffer. A record that cannot be decoded throws MQLITE_CORRUPTION when `record` is read.
 */
import type { LogCursor } from '../types.js';
import { FILE_HEADER, frameDelta, frameTimestamp } from './frame.js';
import type { FsLog } from './log.js';
import { FrameReader } from './reader.js';
import type { Segment } from './segment.js';

/** Read window of a cursor: big enough that a sequential read costs few system calls. */
const WINDOW = 256 * 1024;

const RECORD = 1;
const TIMESTAMP = 2;

export class FsCursor<T> implements LogCursor<T> {
  offset = 0;

  readonly #log: FsLog<T>;
  #reader: FrameReader | undefined;
  /** The segment and position of the next frame, or undefined to look them up from `#want`. */
  #seg: Segment | undefined;
  #generation = 0;
  #pos = 0;
  #slot = 0;
  /** The next offset this cursor may yield. */
  #want: number;

  /** The current frame (`#bytes[#at]` of `#length` bytes, in `#frameSeg`). */
  #frameSeg: Segment | undefined;
  #bytes: Uint8Array | undefined;
  #at = 0;
  #length = 0;
  /** What of the current frame is still to be read from it: RECORD | TIMESTAMP bits. */
  #pending = 0;
  #record: T | undefined;
  #timestamp = Number.NaN;

  constructor(log: FsLog<T>, offset: number) {
    this.#log = log;
    this.#want = offset;
  }

  get record(): T {
    if (this.#pending & RECORD) {
      this.#record = this.#log.decodeAt(this.#frameSeg!, this.#bytes!, this.#at, this.#length);
      this.#pending &= ~RECORD;
    }
    return this.#record as T;
  }

  get timestamp(): number {
    if (this.#pending & TIMESTAMP) {
      this.#timestamp = frameTimestamp(this.#bytes!, this.#at);
      this.#pending &= ~TIMESTAMP;
    }
    return this.#timestamp;
  }

  seek(offset: number): void {
    this.#log.check();
    this.#want = offset;
    this.#seg = undefined;
  }

  next(): boolean {
    const log = this.#log;
    log.check();
    this.#reader ??= new FrameReader(log, WINDOW);
    const reader = this.#reader;
    for (;;) {
      let seg = this.#seg;
      if (!seg || seg.dropped || seg.generation !== this.#generation) seg = this.#position();
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
      const offset = seg.firstOffset + frameDelta(bytes, at);
      if (offset < this.#want || (seg.deletedCount !== 0 && seg.isDeletedSlot(slot))) continue;
      this.#want = offset + 1;
      this.offset = offset;
      this.#frameSeg = seg;
      this.#bytes = bytes;
      this.#at = at;
      this.#length = reader.length;
      this.#pending = RECORD | TIMESTAMP;
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
