/**
 * Reading frames of a segment by position, for cursors and point lookups. Frames on disk are
 * read through a window (one `read` serves many frames); frames still in the log's write buffer
 * are read from there, which is what gives readers their read-your-writes view. A frame's
 * checksum is verified the first time this process reads it from disk; frames this process
 * wrote are trusted.
 */
import { checkFrame, FRAME_HEADER, u32 } from './frame.js';
import { type FsIo, readFully } from './io.js';
import { corruptRecord } from './recovery.js';
import type { Segment } from './segment.js';

/** What a reader needs from its log. */
export interface FrameSource {
  readonly io: FsIo;
  /** The write buffer, holding the active segment's bytes from its `fileSize` on. */
  readonly batch: Uint8Array;
  /** An open descriptor for reading `seg`. */
  fdOf(seg: Segment): number;
}

export class FrameReader {
  /** Bytes holding the frame found by the last `read`: the window or the write buffer. */
  bytes: Uint8Array;
  /** Index of that frame in `bytes`. */
  at = 0;
  /** Its total length. */
  length = 0;
  /**
   * Whether it sits in the log's write buffer, which the next write reuses: read it now. A frame
   * in the window stays readable until this reader's next `read`.
   */
  inBatch = false;

  readonly #source: FrameSource;
  #window: Uint8Array;
  /** The segment (and its generation) whose bytes `[#start, #end)` the window holds. */
  #seg: Segment | undefined;
  #generation = -1;
  #start = 0;
  #end = 0;

  constructor(source: FrameSource, windowBytes: number) {
    this.#source = source;
    this.#window = new Uint8Array(windowBytes);
    this.bytes = this.#window;
  }

  /**
   * Finds the frame at `pos` of `seg`: returns false at the segment's end. With `verify`, a
   * frame not yet checked in this process has its checksum verified (a mismatch throws a
   * CorruptionError); without, only its length is trusted, for walking past it.
   */
  read(seg: Segment, pos: number, verify: boolean): boolean {
    // Fast path, small enough to be inlined: a verified frame wholly inside the window.
    const start = this.#start;
    if (
      seg === this.#seg &&
      pos >= start &&
      pos + FRAME_HEADER <= this.#end &&
      pos < seg.verifiedTo &&
      seg.generation === this.#generation
    ) {
      const window = this.#window;
      const at = pos - start;
      const length = FRAME_HEADER + u32(window, at);
      if (pos + length <= this.#end) {
        this.bytes = window;
        this.at = at;
        this.length = length;
        this.inBatch = false;
        return true;
      }
    }
    return this.#read(seg, pos, verify);
  }

  #read(seg: Segment, pos: number, verify: boolean): boolean {
    if (pos >= seg.size) return false;
    if (pos >= seg.fileSize) {
      const batch = this.#source.batch;
      this.bytes = batch;
      this.at = pos - seg.fileSize;
      this.length = FRAME_HEADER + u32(batch, this.at);
      this.inBatch = true;
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
    const window = this.#window;
    if (verify && pos >= seg.verifiedTo) {
      if (checkFrame(window, at, at + length, length) < 0) throw corruptRecord(seg.file, pos);
      if (pos === seg.verifiedTo) seg.verifiedTo = pos + length;
    }
    this.bytes = window;
    this.at = at;
    this.length = length;
    this.inBatch = false;
    return true;
  }

  /** Reads `seg`'s bytes from `pos` (at least `length` of them) into the window; returns 0. */
  #fill(seg: Segment, pos: number, length: number): number {
    if (length > this.#window.length) {
      this.#window = new Uint8Array(Math.max(length, this.#window.length * 2));
    }
    const want = Math.min(this.#window.length, seg.fileSize - pos);
    const n = readFully(this.#source.io, this.#source.fdOf(seg), this.#window, 0, want, pos);
    this.#seg = seg;
    this.#generation = seg.generation;
    this.#start = pos;
    this.#end = pos + n;
    if (n < length) throw corruptRecord(seg.file, pos, 'is cut short');
    return 0;
  }
}
