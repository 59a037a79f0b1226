/**
 * A log's write buffer: the frames appended since the last write to the active segment, encoded
 * in place and written with one `write` (see `durability.ts` for when). It keeps the open
 * checksum chunk of layout 2 (FORMAT.md): a chunk ends with each write, so a torn write never
 * cuts into confirmed records, and wherever the log ends one before a frame that starts a span
 * of the sparse index.
 */
import { endChunk, fieldsOf } from './frame.js';
import { type FsIo, writeFully } from './io.js';
import type { Segment } from './segment.js';

/**
 * Size a buffer starts with; it doubles up to {@link MAX_BATCH} under load. Small, since every
 * open log holds one: a broker of 100,000 queues, most of them idle, holds 100,000.
 */
const MIN_BATCH = 4 * 1024;
const MAX_BATCH = 1024 * 1024;

function plainView(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
}

export class WriteBuffer {
  /**
   * The bytes, as a Buffer for the codec and the file writes, as a plain Uint8Array view of the
   * same bytes for checksums and readers (the per-record code then sees one kind of array
   * whichever buffer it reads: two would make its loads polymorphic), and as a DataView for
   * frame headers (a few wide stores instead of two dozen byte stores).
   */
  buffer: Buffer = Buffer.allocUnsafe(MIN_BATCH);
  bytes: Uint8Array = plainView(this.buffer);
  fields: DataView = fieldsOf(this.bytes);
  /** Bytes of frames held. */
  used = 0;
  /** Where the open checksum chunk starts, and its last frame. */
  chunkStart = 0;
  chunkLast = 0;

  /**
   * Whether a frame of `frameLength` bytes would take a buffer holding frames past MAX_BATCH:
   * the buffer is then written out first rather than grown.
   */
  isFullFor(frameLength: number): boolean {
    return this.used + frameLength > MAX_BATCH && this.used > 0;
  }

  /** Grows the buffer to hold a frame of `frameLength` bytes after those it holds. */
  fit(frameLength: number): void {
    const need = this.used + frameLength;
    if (need <= this.bytes.length) return;
    let size = this.bytes.length;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    // `need` also covers a record the codec encoded in place after the frames: keep it.
    this.buffer.copy(grown, 0, 0, Math.min(this.buffer.length, need));
    this.buffer = grown;
    this.bytes = plainView(grown);
    this.fields = fieldsOf(this.bytes);
  }

  /** Ends the open chunk at `end` (the end of its last frame). */
  endChunk(end: number): void {
    endChunk(this.bytes, this.chunkStart, this.chunkLast, end);
    this.chunkStart = end;
  }

  /**
   * Writes the frames held at the end of `seg`'s file (its descriptor `fd`) and empties the
   * buffer.
   */
  writeTo(io: FsIo, fd: number, seg: Segment): void {
    const length = this.used;
    // Every write ends a chunk, so a torn write never cuts into confirmed records.
    if (this.chunkStart < length) this.endChunk(length);
    // A failed write leaves the buffer as it was, its chunk ended, to be written again whole at
    // the same place: what part of it reached the file is overwritten with the same bytes.
    writeFully(io, fd, this.buffer, 0, length, seg.fileSize);
    this.chunkStart = 0;
    if (seg.verifiedTo === seg.fileSize) seg.verifiedTo += length;
    seg.fileSize += length;
    this.used = 0;
  }

  /** Forgets the frames held (their records are all gone). */
  clear(): void {
    this.used = 0;
    this.chunkStart = 0;
  }
}
