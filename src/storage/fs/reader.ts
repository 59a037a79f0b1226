/**
 * Reading frames of a segment by position, for cursors and point lookups. Frames on disk are
 * read through a window (one `read` serves many frames); frames still in the log's write buffer
 * are read from there, which is what gives readers their read-your-writes view. A frame's
 * checksum is verified the first time this process reads it from disk; frames this process
 * wrote are trusted.
 */
import { checkFrame, FRAME_HEADER } from './frame.js';
import { type FsIo, readFully } from './io.js';
import { corruptRecord } from './recovery.js';
import type { Segment } from './segment.js';

/** What a reader needs from its log. */
export interface FrameSource {
  readonly io: FsIo;
  /** The write buffer, holding the active segment's bytes from its `fileSize` on. */
  readonly batch: Buffer;
  /** The same memory as a plain Uint8Array, whose views are cheaper to create. */
  readonly batchBytes: Uint8Array;
  /** An open descriptor for reading `seg`. */
  fdOf(seg: Segment): number;
}

export class FrameReader {
  /** Buffer holding the frame found by the last `read`. */
  buf: Buffer;
  /** `buf` as a plain Uint8Array, for cutting the payload view handed to the codec. */
  bytes: Uint8Array;
  /** Index of that frame in `buf`. */
  at = 0;
  /** Its total length. */
  length = 0;

  readonly #source: FrameSource;
  #window: Buffer;
  #windowBytes: Uint8Array;
  #seg: Segment | undefined;
  #generation = -1;
  #start = 0;
  #end = 0;

  constructor(source: FrameSource, windowBytes: number) {
    this.#source = source;
    this.#window = Buffer.allocUnsafe(windowBytes);
    this.#windowBytes = plain(this.#window);
    this.buf = this.#window;
    this.bytes = this.#windowBytes;
  }

  /**
   * Finds the frame at `pos` of `seg`: returns false at the segment's end. With `verify`, a
   * frame not yet checked in this process has its checksum verified (a mismatch throws a
   * CorruptionError); without, only its length is trusted, for walking past it.
   */
  read(seg: Segment, pos: number, verify: boolean): boolean {
    if (pos >= seg.size) return false;
    if (pos >= seg.fileSize) {
      const buf = this.#source.batch;
      this.buf = buf;
      this.bytes = this.#source.batchBytes;
      this.at = pos - seg.fileSize;
      this.length = FRAME_HEADER + buf.readUInt32LE(this.at);
      return true;
    }
    let at = this.#ensure(seg, pos, FRAME_HEADER);
    const length = FRAME_HEADER + this.#window.readUInt32LE(at);
    if (length > seg.fileSize - pos) throw corruptRecord(seg.file, pos, 'is cut short');
    at = this.#ensure(seg, pos, length);
    if (verify && pos >= seg.verifiedTo) {
      if (checkFrame(this.#window, at, at + length, length) < 0) {
        throw corruptRecord(seg.file, pos);
      }
      if (pos === seg.verifiedTo) seg.verifiedTo = pos + length;
    }
    this.buf = this.#window;
    this.bytes = this.#windowBytes;
    this.at = at;
    this.length = length;
    return true;
  }

  /** Makes `seg`'s bytes `[pos, pos + length)` available in the window; returns their index. */
  #ensure(seg: Segment, pos: number, length: number): number {
    if (
      seg === this.#seg &&
      seg.generation === this.#generation &&
      pos >= this.#start &&
      pos + length <= this.#end
    ) {
      return pos - this.#start;
    }
    if (length > this.#window.length) {
      this.#window = Buffer.allocUnsafe(Math.max(length, this.#window.length * 2));
      this.#windowBytes = plain(this.#window);
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

/** A plain Uint8Array over a Buffer's memory. */
export function plain(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
}
