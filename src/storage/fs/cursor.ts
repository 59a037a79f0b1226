/**
 * A forward cursor over an fs log. It walks frames by file position with its own read window,
 * so N cursors are N independent sequential readers; between `next()` calls it holds only a
 * segment, a position and the next offset it wants. If its segment is dropped or rewritten by
 * compaction under it, it finds its place again from that offset through the sparse index.
 *
 * `next()` only walks: the record and timestamp are decoded from the window when first read,
 * so a reader that skips records (by offset or timestamp) pays nothing for their contents. They
 * stay readable until the next `next()` or `seek()` (after which they are undefined and NaN until
 * a record is found). A codec with `decodeView` keeps views of the window in its records: the
 * window is then never read into again, and the next read gets a new one. A frame still in the
 * log's write buffer is decoded at once and copied, since later appends reuse that buffer. A
 * record that cannot be decoded throws MQLITE_CORRUPTION when `record` is read.
 */
import type { LogCursor } from '../types.js';
import { FILE_HEADER, FRAME_HEADER, frameDelta, frameTimestamp, u32 } from './frame.js';
import { FrameReader, type FrameSource } from './reader.js';
import type { Segment } from './segment.js';

/** What a cursor needs of its log (the log implements it; the cursor never imports the log). */
export interface CursorSource<T> extends FrameSource {
  /** Throws if the log is closed or failed. */
  check(): void;
  /**
   * Changes whenever a cursor's cached position may have gone stale: the log closed, or a
   * segment was dropped or rewritten.
   */
  readonly epoch: number;
  /** The retained segments, oldest first. */
  readonly segs: readonly Segment[];
  /** The segment after `seg`, or undefined when `seg` is the active one. */
  segmentAfter(seg: Segment): Segment | undefined;
  /** Whether records may be decoded as views of the bytes read (see `decodeAt`). */
  readonly decodesViews: boolean;
  /** Decodes the record of the frame at `at` in `bytes`, as views of them when `view`. */
  decodeAt(seg: Segment, bytes: Uint8Array, at: number, length: number, view: boolean): T;
}

/**
 * Read window of a cursor: big enough that a sequential read costs few system calls, small
 * enough that a record kept as a view of it keeps little else alive (a 64 KiB window read as
 * fast as 256 KiB).
 */
const WINDOW = 64 * 1024;

// Bits of `frame`: a current frame exists; its record / timestamp are still to be decoded.
const CURRENT = 1;
const RECORD = 2;
const TIMESTAMP = 4;

/**
 * State is kept in TypeScript-private properties rather than `#` fields: with `#` fields, V8
 * (Node 20) optimized this class's hot reads worse once the process had used a cursor on a log it
 * created (writing a stream, or opening an empty one), and every later replay ran at half speed.
 */
export class FsCursor<T> implements LogCursor<T> {
  offset = 0;

  private readonly source: CursorSource<T>;
  private reader: FrameReader | undefined;
  /** The log's epoch when `seg` and the run were last checked. */
  private epoch = -1;
  /** The segment of the next frame, or undefined to look it up from `want`. */
  private seg: Segment | undefined;
  private generation = 0;
  /** Slot of the next frame. */
  private slot = 0;
  /**
   * The next frame is at `bytes[at]`, file position `base + at`. Whole frames from there
   * below `runEnd` are verified and on disk: `next()` walks them without the reader.
   */
  private bytes: Uint8Array = new Uint8Array(0);
  /** The fields of `bytes` (see `fieldsOf`). */
  private fields: DataView = new DataView(this.bytes.buffer);
  private base = 0;
  private at = 0;
  private runEnd = 0;
  /** The next offset this cursor may yield. */
  private want: number;

  /** The current frame: CURRENT, RECORD and TIMESTAMP bits; it spans `[frameAt, at)`. */
  private frame = 0;
  private frameAt = 0;
  private decoded: T | undefined;
  private decodedTimestamp = Number.NaN;

  constructor(log: CursorSource<T>, offset: number) {
    this.source = log;
    this.want = offset;
  }

  get record(): T {
    const frame = this.frame;
    if (frame & RECORD) {
      const at = this.frameAt;
      const log = this.source;
      // A frame in the read window may be decoded as views: the reader then reads into a new
      // window rather than over this one. One in the write buffer is copied.
      const view = log.decodesViews && !this.reader!.inBatch;
      if (view) this.reader!.lend();
      this.decoded = log.decodeAt(this.seg!, this.bytes, at, this.at - at, view);
      this.frame = frame & ~RECORD;
    }
    return (frame & CURRENT ? this.decoded : undefined) as T;
  }

  get timestamp(): number {
    const frame = this.frame;
    if (frame & TIMESTAMP) {
      this.decodedTimestamp = frameTimestamp(this.fields, this.frameAt);
      this.frame = frame & ~TIMESTAMP;
    }
    return frame & CURRENT ? this.decodedTimestamp : Number.NaN;
  }

  seek(offset: number): void {
    this.source.check();
    this.frame = 0;
    this.want = offset;
    this.seg = undefined;
    this.runEnd = 0;
  }

  next(): boolean {
    // Fast path, small enough to be inlined into the caller's loop: the next frame of the
    // current run is wanted, and nothing moved under the cursor. Anything else is `walk()`.
    const at = this.at;
    const runEnd = this.runEnd;
    if (at + FRAME_HEADER <= runEnd && this.epoch === this.source.epoch) {
      const bytes = this.bytes;
      const seg = this.seg!;
      const end = at + FRAME_HEADER + u32(bytes, at);
      const slot = this.slot;
      // A dense segment holds offset firstOffset + slot at each slot; a compacted one says.
      const offset = seg.firstOffset + (seg.present ? frameDelta(bytes, at) : slot);
      if (end <= runEnd && offset >= this.want && seg.deletedCount === 0) {
        this.slot = slot + 1;
        this.at = end;
        this.frameAt = at;
        this.want = offset + 1;
        this.offset = offset;
        this.frame = CURRENT | RECORD | TIMESTAMP;
        return true;
      }
    }
    return this.walk();
  }

  /** `next()` past skipped frames and across windows, segments and the write buffer. */
  private walk(): boolean {
    this.frame = 0;
    const log = this.source;
    if (this.epoch === log.epoch) {
      // The rest of the run, skipping frames before `want` and deleted ones.
      const bytes = this.bytes;
      const runEnd = this.runEnd;
      const seg = this.seg!;
      let at = this.at;
      while (at + FRAME_HEADER <= runEnd) {
        const end = at + FRAME_HEADER + u32(bytes, at);
        if (end > runEnd) break;
        const slot = this.slot++;
        const offset = seg.firstOffset + (seg.present ? frameDelta(bytes, at) : slot);
        if (offset >= this.want && (seg.deletedCount === 0 || !seg.isDeletedSlot(slot))) {
          return this.yieldFrame(offset, at, end);
        }
        at = end;
      }
      this.at = at;
    }
    log.check();
    this.epoch = log.epoch;
    for (;;) {
      let seg = this.seg;
      if (!seg || seg.dropped || seg.generation !== this.generation) seg = this.position();
      const reader = this.reader!;
      const pos = this.base + this.at;
      if (!reader.read(seg, pos, true)) {
        const after = log.segmentAfter(seg);
        if (!after) return false;
        this.enter(after, FILE_HEADER, 0);
        continue;
      }
      const bytes = reader.bytes;
      const frameAt = reader.at;
      const end = frameAt + reader.length;
      this.bytes = bytes;
      this.fields = reader.fields;
      this.base = pos - frameAt;
      this.runEnd = reader.runEnd;
      const slot = this.slot++;
      const offset = seg.firstOffset + (seg.present ? frameDelta(bytes, frameAt) : slot);
      if (offset < this.want || (seg.deletedCount !== 0 && seg.isDeletedSlot(slot))) {
        this.at = end;
        // The rest of the run is walked above.
        if (this.runEnd > end) return this.walk();
        continue;
      }
      this.yieldFrame(offset, frameAt, end);
      if (reader.inBatch) {
        // Later appends reuse the write buffer: read the frame while it is there.
        void this.record;
        void this.timestamp;
      }
      return true;
    }
  }

  /** Makes the frame `[at, end)` of `bytes`, holding `offset`, the current one. */
  private yieldFrame(offset: number, at: number, end: number): true {
    this.at = end;
    this.frameAt = at;
    this.want = offset + 1;
    this.offset = offset;
    this.frame = CURRENT | RECORD | TIMESTAMP;
    return true;
  }

  /** Finds the segment and position from which `want` is reached. */
  private position(): Segment {
    this.reader ??= new FrameReader(this.source, WINDOW);
    const segs = this.source.segs;
    const want = Math.max(this.want, segs[0]!.firstOffset);
    this.want = Number.isNaN(want) ? segs[0]!.firstOffset : want;
    let lo = 0;
    let hi = segs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (segs[mid]!.lastOffset < this.want) lo = mid + 1;
      else hi = mid;
    }
    const seg = segs[lo]!;
    if (seg.sparseCount === 0) {
      this.enter(seg, FILE_HEADER, 0);
    } else {
      const entry = seg.sparseBefore(seg.slotAtOrAfter(this.want));
      this.enter(seg, seg.sparsePos[entry]!, seg.sparseSlot[entry]!);
    }
    return seg;
  }

  private enter(seg: Segment, pos: number, slot: number): void {
    this.seg = seg;
    this.generation = seg.generation;
    this.base = pos;
    this.at = 0;
    this.runEnd = 0;
    this.slot = slot;
  }
}
