/**
 * The in-memory summary of one segment file: per-record byte lengths and deletion bits, a sparse
 * offset → file position index (one entry per {@link SPARSE_EVERY} bytes) and the totals of
 * `SegmentInfo`. It is what lets a reopened log serve seeks, counts and acks without reading
 * records: it is saved to an index file on roll and close and loaded from there.
 *
 * Records are addressed by slot. A segment as written is dense: the slot of an offset is its
 * delta from `firstOffset`. Compaction physically removes deleted records, after which the
 * segment is sparse: `present` lists the deltas still stored, and a slot is found by binary
 * search. Removed records still count in `count`, `bytes` and `deletedCount`, so compaction is
 * invisible in `SegmentInfo`.
 */
import path from 'node:path';
import type { SegmentInfo } from '../types.js';
import { crc32Range } from './checksum.js';
import { FILE_HEADER, FRAME_CHECKSUM_LAYOUT, frameOverhead, SEGMENT_LAYOUT } from './frame.js';
import type { FileHandle } from './handles.js';

/** Bytes of records between two entries of the sparse position index. */
export const SPARSE_EVERY = 4096;

/** A segment id as its files are named: ten decimal digits. */
function idDigits(id: number): string {
  return String(id).padStart(10, '0');
}

export function segmentFileName(id: number): string {
  return `${idDigits(id)}.seg`;
}

export function indexFileName(id: number): string {
  return `${idDigits(id)}.idx`;
}

export class Segment implements SegmentInfo {
  readonly id: number;
  readonly firstOffset: number;
  /** Path of the segment file. */
  readonly file: string;
  /** Path of the index file. */
  readonly indexFile: string;
  /** Rewrite generation, as in the file header. */
  generation: number;
  /** Layout of the file, as in its header: which frames carry checksums. */
  layout: number;
  /** Bytes of a frame that are not its record (a field, not a call: it is read per record). */
  frameOverhead: number;

  /** Offsets covered: `lastOffset = firstOffset + span - 1`. */
  span = 0;
  /** Records stored or removed by compaction, deleted ones included. */
  get count(): number {
    return this.span;
  }
  deletedCount = 0;
  bytes = 0;
  /** Bytes of the deleted records (so live bytes need no scan). */
  deletedBytes = 0;
  /** Bytes of the records compaction removed (part of `deletedBytes`). */
  removedBytes = 0;
  firstTimestamp = Number.NaN;
  lastTimestamp = Number.NaN;

  /** Sorted offset deltas of the stored records once compacted; undefined while dense. */
  present: Uint32Array | undefined;
  /** Stored records (slots in use). */
  slots = 0;
  /** `byteLength` per slot. */
  lens: Uint32Array = new Uint32Array(64);
  /** Deletion bit per slot. */
  deleted: Uint8Array = new Uint8Array(8);

  /** Sparse index: slot, file position and timestamp of every SPARSE_EVERY-th byte's record. */
  sparseCount = 0;
  sparseSlot: Uint32Array = new Uint32Array(16);
  sparsePos: Float64Array = new Float64Array(16);
  sparseTs: Float64Array = new Float64Array(16);

  /** Bytes in the file. */
  fileSize = FILE_HEADER;
  /** File size plus bytes still in the write buffer (differs only for the active segment). */
  size = FILE_HEADER;
  /** Frames below this position have passed their checksum in this process. */
  verifiedTo = FILE_HEADER;
  /**
   * Layout 1 only: the running checksum at the end of each sparse span. Entry `i` is the CRC-32
   * of the file's frames from the first one up to the next entry's position (the last entry: up
   * to `checksummedTo`). A reader verifies every whole span in its window with one call into
   * zlib, from the entry before them, instead of frame by frame. They are computed from frames
   * scanned and verified, never from unverified bytes. Layout 2 segments need none: their
   * spans are whole chunks, which check in one call without them.
   */
  spanChecksums: Uint32Array = new Uint32Array(16);
  /**
   * File position up to which `spanChecksums` are exact; -1 when there are none (layout 2, or a
   * version 1 index).
   */
  checksummedTo: number;

  /** The file's descriptor, opened on demand (set by the log's segment files). */
  handle: FileHandle | undefined;
  /** An index file may exist for it (so dropping it removes one). */
  indexed = false;
  /** Dropped from the log (unlinked, or to be once its deletions may reach the disk). */
  dropped = false;
  /** What its deletions wait for: the highest of their needs (see `FsLog.markDeleted`). */
  deletionNeed = 0;

  constructor(
    dir: string,
    id: number,
    firstOffset: number,
    generation: number,
    layout = SEGMENT_LAYOUT,
  ) {
    this.id = id;
    this.firstOffset = firstOffset;
    this.generation = generation;
    this.layout = layout;
    this.frameOverhead = frameOverhead(layout);
    this.checksummedTo = layout === FRAME_CHECKSUM_LAYOUT ? FILE_HEADER : -1;
    this.file = path.join(dir, segmentFileName(id));
    this.indexFile = path.join(dir, indexFileName(id));
  }

  get lastOffset(): number {
    return this.firstOffset + this.span - 1;
  }

  /** Live records. */
  get live(): number {
    return this.span - this.deletedCount;
  }

  /** The slot of `offset`, or -1 when not stored here (never written, removed, not an integer). */
  slotOf(offset: number): number {
    const delta = offset - this.firstOffset;
    if (!(delta >= 0 && delta < this.span) || !Number.isInteger(delta)) return -1;
    const present = this.present;
    if (!present) return delta;
    const slot = countBelow(present, this.slots, delta);
    return slot < this.slots && present[slot] === delta ? slot : -1;
  }

  /** The first slot whose offset is at or after `offset` (`slots` when there is none). */
  slotAtOrAfter(offset: number): number {
    const delta = Math.ceil(offset - this.firstOffset);
    if (!(delta > 0)) return 0;
    const present = this.present;
    if (!present) return Math.min(delta, this.slots);
    return countBelow(present, this.slots, delta);
  }

  /** Offset delta of a slot. */
  deltaOf(slot: number): number {
    return this.present ? this.present[slot]! : slot;
  }

  isDeletedSlot(slot: number): boolean {
    return (this.deleted[slot >>> 3]! & (1 << (slot & 7))) !== 0;
  }

  /** Sets a slot's deletion bit; returns false if it was already set. */
  markSlot(slot: number): boolean {
    const byte = slot >>> 3;
    const bit = 1 << (slot & 7);
    const deleted = this.deleted;
    if (deleted[byte]! & bit) return false;
    deleted[byte] = deleted[byte]! | bit;
    this.deletedCount++;
    this.deletedBytes += this.lens[slot]!;
    return true;
  }

  /**
   * Adds a record at file position `pos`. `delta` is its offset delta; a gap after the previous
   * record (only in a compacted segment found without its index) makes the segment sparse.
   */
  add(
    delta: number,
    byteLength: number,
    timestamp: number,
    pos: number,
    frameLength: number,
  ): void {
    const slot = this.slots;
    if (delta !== this.span && !this.present) this.#makeSparse();
    if (this.present) {
      if (slot >= this.present.length) this.present = grow32(this.present, slot + 1);
      this.present[slot] = delta;
      this.deletedCount += delta - this.span; // removed records are deleted ones
    }
    if (slot >= this.lens.length) this.lens = grow32(this.lens, slot + 1);
    if (slot >>> 3 >= this.deleted.length) this.deleted = grow8(this.deleted, (slot >>> 3) + 1);
    this.lens[slot] = byteLength;
    this.slots = slot + 1;
    this.span = delta + 1;
    this.bytes += byteLength;
    if (slot === 0) this.firstTimestamp = timestamp;
    this.lastTimestamp = timestamp;
    if (this.startsSpan(pos)) this.#addSparse(slot, pos, timestamp);
    this.size = pos + frameLength;
  }

  /** Whether the next record, at file position `pos`, starts a span of the sparse index. */
  startsSpan(pos: number): boolean {
    const n = this.sparseCount;
    return n === 0 || pos - this.sparsePos[n - 1]! >= SPARSE_EVERY;
  }

  /** Sizes the per-slot tables for `slots` records up front (a new segment sized like the last). */
  reserve(slots: number): void {
    if (slots > this.lens.length) this.lens = grow32(this.lens, slots);
    if ((slots + 7) >>> 3 > this.deleted.length)
      this.deleted = grow8(this.deleted, (slots + 7) >>> 3);
  }

  #addSparse(slot: number, pos: number, timestamp: number): void {
    const n = this.sparseCount;
    if (n >= this.sparseSlot.length) {
      this.sparseSlot = grow32(this.sparseSlot, n + 1);
      this.sparsePos = grow64(this.sparsePos, n + 1);
      this.sparseTs = grow64(this.sparseTs, n + 1);
    }
    if (n >= this.spanChecksums.length) this.spanChecksums = grow32(this.spanChecksums, n + 1);
    this.sparseSlot[n] = slot;
    this.sparsePos[n] = pos;
    this.sparseTs[n] = timestamp;
    this.sparseCount = n + 1;
  }

  #makeSparse(): void {
    const present = new Uint32Array(Math.max(16, this.slots * 2));
    for (let i = 0; i < this.slots; i++) present[i] = i;
    this.present = present;
  }

  /**
   * The sparse index entry to start walking from to reach `slot`: the last entry at or before
   * it. Returns its index (0 when the segment is empty).
   */
  sparseBefore(slot: number): number {
    // Slots are integers: entries at or before `slot` are those below `slot + 1`.
    return Math.max(0, countBelow(this.sparseSlot, this.sparseCount, slot + 1) - 1);
  }

  /**
   * Extends the span checksums over `bytes[from, to)`, the file's bytes from position `pos` on.
   * Bytes that do not follow on from `checksummedTo` leave the checksums unknown.
   */
  checksum(bytes: Uint8Array, from: number, to: number, pos: number): void {
    if (from === to || this.checksummedTo < 0) return;
    if (pos !== this.checksummedTo || this.sparseCount === 0) {
      this.checksummedTo = -1;
      return;
    }
    const n = this.sparseCount;
    const sums = this.spanChecksums;
    // The running checksum so far is that of the span holding the last byte checksummed.
    let crc = pos === FILE_HEADER ? 0 : sums[this.sparseAtOrAfter(pos) - 1]!;
    let span = this.sparseAtOrAfter(pos + 1) - 1;
    while (from < to) {
      const spanEnd = span + 1 < n ? this.sparsePos[span + 1]! : Number.POSITIVE_INFINITY;
      const stop = Math.min(to, from + spanEnd - pos);
      crc = crc32Range(bytes, from, stop, crc);
      sums[span] = crc;
      pos += stop - from;
      from = stop;
      if (pos === spanEnd) span++;
    }
    this.checksummedTo = pos;
  }

  /**
   * Up to where whole spans can be checked at once: `checksummedTo` in layout 1; the file's end in
   * layout 2, whose spans are whole chunks and where every write ends a chunk.
   */
  get checkableTo(): number {
    return this.layout === FRAME_CHECKSUM_LAYOUT ? this.checksummedTo : this.fileSize;
  }

  /** Where span `i` ends: the next entry's position, or `checkableTo` for the last one. */
  spanEnd(i: number): number {
    return i + 1 < this.sparseCount ? this.sparsePos[i + 1]! : this.checkableTo;
  }

  /** The first sparse entry at or after file position `pos` (`sparseCount` when none). */
  sparseAtOrAfter(pos: number): number {
    return countBelow(this.sparsePos, this.sparseCount, pos);
  }

  /** The last sparse entry whose timestamp is below `timestamp` (0 when none). */
  sparseBeforeTime(timestamp: number): number {
    return Math.max(0, countBelow(this.sparseTs, this.sparseCount, timestamp) - 1);
  }

  /** Trims the growable tables once the segment is sealed. */
  trim(): void {
    this.lens = this.lens.slice(0, this.slots);
    this.deleted = this.deleted.slice(0, (this.slots + 7) >>> 3);
    if (this.present) this.present = this.present.slice(0, this.slots);
    const n = this.sparseCount;
    this.sparseSlot = this.sparseSlot.slice(0, n);
    this.sparsePos = this.sparsePos.slice(0, n);
    this.sparseTs = this.sparseTs.slice(0, n);
    this.spanChecksums = this.spanChecksums.slice(0, n);
  }

  /** Replaces the tables with those of a rewritten (compacted) copy of this segment. */
  adopt(from: Segment): void {
    this.generation = from.generation;
    this.layout = from.layout;
    this.frameOverhead = from.frameOverhead;
    this.present = from.present ?? Uint32Array.from({ length: from.slots }, (_, i) => i);
    this.removedBytes = this.deletedBytes;
    this.slots = from.slots;
    this.lens = from.lens;
    this.deleted = from.deleted;
    this.sparseCount = from.sparseCount;
    this.sparseSlot = from.sparseSlot;
    this.sparsePos = from.sparsePos;
    this.sparseTs = from.sparseTs;
    this.fileSize = from.fileSize;
    this.size = from.size;
    this.verifiedTo = from.verifiedTo;
    this.spanChecksums = from.spanChecksums;
    this.checksummedTo = from.checksummedTo;
  }
}

/** How many of the first `count` entries of ascending `sorted` are below `value`. */
function countBelow(sorted: Uint32Array | Float64Array, count: number, value: number): number {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function grow32(a: Uint32Array, need: number): Uint32Array {
  const b = new Uint32Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}
function grow64(a: Float64Array, need: number): Float64Array {
  const b = new Float64Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}
function grow8(a: Uint8Array, need: number): Uint8Array {
  const b = new Uint8Array(Math.max(need, a.length * 2));
  b.set(a);
  return b;
}
