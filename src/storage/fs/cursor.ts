/**
 * A forward cursor over an fs log. It walks frames by file position with its own read window,
 * so N cursors are N independent sequential readers; between `next()` calls it holds only a
 * segment, a position and the next offset it wants. If its segment is dropped or rewritten by
 * compaction under it, it finds its place again from that offset through the sparse index.
 */
import type { LogCursor } from '../types.js';
import { FILE_HEADER, frameDelta, frameTimestamp } from './frame.js';
import type { FsLog } from './log.js';
import { FrameReader } from './reader.js';
import type { Segment } from './segment.js';

/** Read window of a cursor: big enough that a sequential read costs few system calls. */
const WINDOW = 128 * 1024;

export class FsCursor<T> implements LogCursor<T> {
  offset = 0;
  timestamp = Number.NaN;
  record!: T;

  readonly #log: FsLog<T>;
  #reader: FrameReader | undefined;
  /** The segment and position of the next frame, or undefined to look them up from `#want`. */
  #seg: Segment | undefined;
  #generation = 0;
  #pos = 0;
  #slot = 0;
  /** The next offset this cursor may yield. */
  #want: number;

  constructor(log: FsLog<T>, offset: number) {
    this.#log = log;
    this.#want = offset;
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
      const { buf, at } = reader;
      const slot = this.#slot++;
      this.#pos += reader.length;
      const offset = seg.firstOffset + frameDelta(buf, at);
      if (offset < this.#want || seg.isDeletedSlot(slot)) continue;
      this.#want = offset + 1;
      this.record = log.decode(seg, reader);
      this.offset = offset;
      this.timestamp = frameTimestamp(buf, at);
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
