/**
 * Reading frames of a segment by position, for cursors and point lookups. Frames on disk are
 * read through a window (one `read` serves many frames); frames still in the log's write buffer
 * are read from there, which is what gives readers their read-your-writes view. A frame is
 * verified the first time this process reads it from disk; frames this process wrote are
 * trusted. Verification runs in bulk: a verified read checks every unchecked frame from there to
 * the end of the window in one loop, so the frames after it are read with no per-frame check
 * (see {@link FrameReader.runEnd}). The spans of the sparse index that lie wholly in the window
 * are checked with one call (layout 2: spans are whole chunks; layout 1: against the running
 * checksums of its index), so a verified read first brings the whole span holding its frame
 * into the window. Where a span fails (or cannot be checked whole), it is checked a run at a
 * time (a frame in layout 1, a chunk in layout 2), which finds the bad run and still reads the
 * runs around it.
 */
import { crc32Range } from './checksum.js';
import {
  BAD_CHECKSUM,
  checkChunks,
  checkRun,
  FRAME_CHECKSUM_LAYOUT,
  FRAME_HEADER,
  fieldsOf,
  frameDelta,
  frameTimestamp,
  statedRunEnd,
  u32,
} from './frame.js';
import { type FsIo, readFully } from './io.js';
import { corruptRecord } from './recovery.js';
import type { Segment } from './segment.js';
import type { WriteBuffer } from './write-buffer.js';

/** What a reader needs from its log. */
export interface FrameSource {
  readonly io: FsIo;
  /** The write buffer, holding the active segment's bytes from its `fileSize` on. */
  readonly writeBuffer: WriteBuffer;
  /** An open descriptor for reading `seg`. */
  fdOf(seg: Segment): number;
}

export class FrameReader {
  /** Bytes holding the frame found by the last `read`: the window or the write buffer. */
  bytes: Uint8Array;
  /** The fields of `bytes` (see `fieldsOf`). */
  fields: DataView;
  /** Index of that frame in `bytes`. */
  at = 0;
  /** Its total length. */
  length = 0;
  /**
   * Whether it sits in the log's write buffer, which the next write reuses: read it now. A frame
   * in the window stays readable until this reader's next `read`, and for good once the window
   * is lent.
   */
  inBatch = false;
  /**
   * After a verified read: index in `bytes` below which every whole frame from `at` on is on disk
   * and verified, so the caller may walk them by their length fields without calling `read`
   * (while the segment is neither dropped nor rewritten). `at` when the frame is in the write
   * buffer.
   */
  runEnd = 0;

  readonly #source: FrameSource;
  /** The window's size once something is read: none is allocated before (see the constructor). */
  readonly #windowBytes: number;
  #window: Uint8Array;
  #windowFields: DataView;
  /** Whether views of the window were handed out: the next fill then reads into a new one. */
  #lent = false;
  /** The segment (and its generation) whose bytes `[#start, #end)` the window holds. */
  #seg: Segment | undefined;
  #generation = -1;
  #start = 0;
  #end = 0;
  /** File positions: every whole frame of the window in `[#vFrom, #vTo)` is verified. */
  #vFrom = 0;
  #vTo = 0;

  /**
   * The window is allocated by the first read: a log that is written and never read (most of
   * them, in a broker of many queues) holds none.
   */
  constructor(source: FrameSource, windowBytes: number) {
    this.#source = source;
    this.#windowBytes = windowBytes;
    this.#window = new Uint8Array(0);
    this.#windowFields = fieldsOf(this.#window);
    this.bytes = this.#window;
    this.fields = this.#windowFields;
  }

  /**
   * Finds the frame at `pos` of `seg`: returns false at the segment's end. With `verify`, a
   * frame not yet checked in this process has its checksum verified, with the unchecked frames
   * after it in the window (a mismatch of this frame throws a CorruptionError; of a later one,
   * only when it is read); without, only its length is trusted, for walking past it.
   */
  read(seg: Segment, pos: number, verify: boolean): boolean {
    // Fast path, small enough to be inlined: a frame wholly inside the window (and verified).
    const start = this.#start;
    const from = verify ? this.#vFrom : start;
    const limit = verify ? this.#vTo : this.#end;
    if (
      seg === this.#seg &&
      pos >= from &&
      pos + FRAME_HEADER <= limit &&
      seg.generation === this.#generation
    ) {
      const window = this.#window;
      const at = pos - start;
      const length = FRAME_HEADER + u32(window, at);
      if (pos + length <= limit) {
        this.bytes = window;
        this.fields = this.#windowFields;
        this.at = at;
        this.length = length;
        this.inBatch = false;
        this.runEnd = limit - start;
        return true;
      }
    }
    return this.#read(seg, pos, verify);
  }

  /** Positions the reader on the (verified) frame of `slot`, checking it holds `offset`. */
  locate(seg: Segment, slot: number, offset: number): void {
    const entry = seg.sparseBefore(slot);
    let s = seg.sparseSlot[entry]!;
    let pos = seg.sparsePos[entry]!;
    for (; s < slot; s++) {
      if (!this.read(seg, pos, false)) break;
      pos += this.length;
    }
    if (
      !this.read(seg, pos, true) ||
      seg.firstOffset + frameDelta(this.bytes, this.at) !== offset
    ) {
      throw corruptRecord(seg.file, pos, `does not hold offset ${offset}`);
    }
  }

  /** The offset of the first record of `seg` stamped at or after `timestamp`, or -1 if none. */
  offsetAt(seg: Segment, timestamp: number): number {
    let pos = seg.sparsePos[seg.sparseBeforeTime(timestamp)]!;
    while (this.read(seg, pos, false)) {
      if (frameTimestamp(this.fields, this.at) >= timestamp) {
        return seg.firstOffset + frameDelta(this.bytes, this.at);
      }
      pos += this.length;
    }
    return -1;
  }

  #read(seg: Segment, pos: number, verify: boolean): boolean {
    if (pos >= seg.size) return false;
    if (pos >= seg.fileSize) {
      const buffer = this.#source.writeBuffer;
      this.bytes = buffer.bytes;
      this.fields = buffer.fields;
      this.at = pos - seg.fileSize;
      this.length = FRAME_HEADER + u32(buffer.bytes, this.at);
      this.inBatch = true;
      this.runEnd = this.at;
      return true;
    }
    let at = pos - this.#start;
    if (
      seg !== this.#seg ||
      seg.generation !== this.#generation ||
      at < 0 ||
      pos + FRAME_HEADER > this.#end
    ) {
      at = this.#fill(seg, pos, FRAME_HEADER);
    }
    const length = FRAME_HEADER + u32(this.#window, at);
    if (pos + length > this.#end) {
      if (length > seg.fileSize - pos) throw corruptRecord(seg.file, pos, 'is cut short');
      at = this.#fill(seg, pos, length);
    }
    if (verify && (pos < this.#vFrom || pos + length > this.#vTo)) {
      at = this.#holdSpan(seg, pos, length, at);
      this.#verify(seg, pos, length);
    }
    this.bytes = this.#window;
    this.fields = this.#windowFields;
    this.at = at;
    this.length = length;
    this.inBatch = false;
    this.runEnd = verify ? this.#vTo - this.#start : at;
    return true;
  }

  /**
   * Makes the window's verified range cover the frame of `length` bytes at `pos` (wholly in the
   * window), and every whole frame after it up to the window's end or a bad frame. Frames before
   * `pos` that were walked past unverified stay so. The segment's verified prefix grows with it
   * when the two join.
   */
  #verify(seg: Segment, pos: number, length: number): void {
    const start = this.#start;
    const end = this.#end;
    const prefix = Math.min(end, seg.verifiedTo);
    let from = pos;
    let run = pos;
    if (pos >= this.#vFrom && pos <= this.#vTo) {
      from = this.#vFrom;
      run = this.#vTo;
    }
    if (prefix >= from) {
      // The segment's verified prefix reaches this range: all of the window before it is good.
      from = start;
      if (prefix > run) run = prefix;
    }
    if (run < end) {
      // Checks start where spans (and so chunks) do: at the start of the span holding `run`,
      // which #holdSpan brought into the window.
      const spanStart = seg.sparsePos[seg.sparseAtOrAfter(run + 1) - 1]!;
      if (spanStart >= start) {
        run = spanStart;
        if (spanStart < from) from = spanStart;
      }
    }
    const window = this.#window;
    const maxPayload = seg.fileSize;
    // Whole spans are verified together where they can be; other runs one by one.
    const checkableTo = seg.checkableTo;
    let spans = checkableTo > 0 ? seg.sparseCount : 0;
    const chunked = seg.layout !== FRAME_CHECKSUM_LAYOUT;
    const sums = seg.spanChecksums;
    let span = spans > 0 ? seg.sparseAtOrAfter(run) : 0;
    while (run + FRAME_HEADER <= end) {
      if (span < spans && seg.sparsePos[span] === run) {
        // The last span from here that ends in the window and can be checked (a span starting
        // at `checkableTo` is one whose frames are still in the write buffer).
        const limit = Math.min(end, checkableTo);
        let last = span - 1;
        while (
          last + 1 < spans &&
          seg.sparsePos[last + 1]! < checkableTo &&
          seg.spanEnd(last + 1) <= limit
        ) {
          last++;
        }
        if (last >= span) {
          const to = seg.spanEnd(last);
          const good = chunked
            ? checkChunks(window, run - start, to - start)
            : crc32Range(window, run - start, to - start, span > 0 ? sums[span - 1]! : 0) ===
              sums[last];
          if (good) {
            run = to;
            span = last + 1;
            continue;
          }
          spans = 0; // failing: the rest of the window run by run, which finds the bad run
        } else if (run >= pos + length) {
          break; // a span past the window's end: left to the read that reaches it (see #read)
        }
      }
      const total = checkRun(seg.layout, window, run - start, end - start, maxPayload);
      if (total === BAD_CHECKSUM && run < pos) {
        // A bad run before the frame's own leaves it good: the range restarts after it.
        const stated = statedRunEnd(seg.layout, window, run - start, end - start, maxPayload);
        const runEnd = stated < 0 ? end : start + stated;
        if (runEnd > pos) throw corruptRecord(seg.file, run);
        run = from = runEnd;
        continue;
      }
      if (total < 0) break;
      run += total;
      if (span < spans && seg.sparsePos[span]! < run) span++;
    }
    // `run` is at or past `pos`, on a run's boundary: short of the frame's end means its run
    // failed, and that run starts at `pos`.
    if (run < pos + length) throw corruptRecord(seg.file, pos);
    this.#vFrom = from;
    this.#vTo = run;
    if (seg.verifiedTo >= from && run > seg.verifiedTo) seg.verifiedTo = run;
  }

  /**
   * Refills the window, if it does not hold them, with the span of the sparse index holding the
   * frame of `length` bytes at `pos` (index `at` in the window) and the frame, since checks start
   * at spans; returns the frame's index.
   */
  #holdSpan(seg: Segment, pos: number, length: number, at: number): number {
    const span = seg.sparseAtOrAfter(pos + 1) - 1;
    const from = seg.sparsePos[span]!;
    const next = span + 1 < seg.sparseCount ? seg.sparsePos[span + 1]! : seg.fileSize;
    const to = Math.max(Math.min(next, seg.fileSize), pos + length);
    if (from >= this.#start && to <= this.#end) return at;
    this.#fill(seg, from, to - from);
    return pos - from;
  }

  /**
   * Promises that the window's bytes are never overwritten: the caller keeps views of them. A
   * new window costs less than copying each record out of this one.
   */
  lend(): void {
    this.#lent = true;
  }

  /** Reads `seg`'s bytes from `pos` (at least `length` of them) into the window; returns 0. */
  #fill(seg: Segment, pos: number, length: number): number {
    const size = this.#window.length;
    if (length > size || this.#lent) {
      const grown = length > size ? Math.max(length, size * 2, this.#windowBytes) : size;
      this.#window = new Uint8Array(grown);
      this.#windowFields = fieldsOf(this.#window);
    }
    this.#lent = false;
    const want = Math.min(this.#window.length, seg.fileSize - pos);
    const n = readFully(this.#source.io, this.#source.fdOf(seg), this.#window, 0, want, pos);
    this.#seg = seg;
    this.#generation = seg.generation;
    this.#start = pos;
    this.#end = pos + n;
    // Whole frames below the segment's verified prefix need no check.
    this.#vFrom = pos;
    this.#vTo = Math.max(pos, Math.min(this.#end, seg.verifiedTo));
    if (n < length) throw corruptRecord(seg.file, pos, 'is cut short');
    return 0;
  }
}
