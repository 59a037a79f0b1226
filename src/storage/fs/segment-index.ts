/**
 * The index file saved beside each segment on roll and on close (`0000000001.idx`, layout in
 * FORMAT.md): the segment's tables (see `Segment`), so reopening a log reads a few small files
 * instead of its records. It records the segment file's generation and size; an index that does
 * not match the file (a crash after more appends, a compaction cut short) covers a prefix at
 * best, and the rest is scanned. A checksum guards against a torn index, which is then ignored.
 * Tables are copied byte for byte, swapped only on a big-endian machine.
 *
 * Version 2 adds the running checksum of a layout 1 segment at the end of each sparse span (see
 * `Segment.spanChecksums`), so that the first read of a reopened segment verifies a window of
 * frames per call into zlib instead of frame by frame. An index is written in version 1 when
 * there are none (layout 2 segments, whose chunks carry checksums, and layout 1 segments loaded
 * from a version 1 index, which are verified frame by frame).
 */
import { isNoSpace } from '../../errors.js';
import { crc32 } from './checksum.js';
import { FRAME_CHECKSUM_LAYOUT, LITTLE_ENDIAN } from './frame.js';
import { type FsIo, readFile, unlinkIfPresent, writeFully } from './io.js';
import type { Segment } from './segment.js';

const INDEX_MAGIC = 0x494c514d; // "MQLI"
const HEAD = 80;

/** Bytes of the tables after the head, for an index of `version`. */
function tablesSize(version: number, slots: number, n: number, sparse: boolean): number {
  return n * 16 + slots * 4 + (sparse ? slots * 4 : 0) + n * 4 + (version >= 2 ? n * 4 : 0);
}

/** Writes the index of `seg` (not fsynced: a lost index only costs a scan), unless the disk is full. */
export function writeSegmentIndex(io: FsIo, seg: Segment): void {
  const slots = seg.slots;
  const n = seg.sparseCount;
  const sparse = seg.present !== undefined;
  const version = seg.checksummedTo === seg.fileSize ? 2 : 1;
  const size = HEAD + tablesSize(version, slots, n, sparse) + 4;
  const buf = Buffer.alloc(size);
  buf.writeUInt32LE(INDEX_MAGIC, 0);
  buf.writeUInt32LE(version, 4);
  buf.writeDoubleLE(seg.firstOffset, 8);
  buf.writeUInt32LE(seg.generation, 16);
  buf.writeUInt32LE(sparse ? 1 : 0, 20);
  buf.writeDoubleLE(seg.fileSize, 24);
  buf.writeUInt32LE(seg.span, 32);
  buf.writeUInt32LE(slots, 36);
  buf.writeUInt32LE(n, 40);
  buf.writeDoubleLE(seg.bytes, 48);
  buf.writeDoubleLE(seg.removedBytes, 56);
  buf.writeDoubleLE(seg.firstTimestamp, 64);
  buf.writeDoubleLE(seg.lastTimestamp, 72);
  let at = HEAD;
  at = put(buf, at, seg.sparseTs, n * 8);
  at = put(buf, at, seg.sparsePos, n * 8);
  at = put(buf, at, seg.lens, slots * 4);
  if (seg.present) at = put(buf, at, seg.present, slots * 4);
  at = put(buf, at, seg.sparseSlot, n * 4);
  if (version >= 2) at = put(buf, at, seg.spanChecksums, n * 4);
  buf.writeUInt32LE(crc32(buf.subarray(0, at)), at);
  const fd = io.openSync(seg.indexFile, 'w');
  seg.indexed = true;
  try {
    writeFully(io, fd, buf, 0, buf.length, 0);
  } catch (error) {
    if (!isNoSpace(error)) throw error;
    // An index is a cache: a full disk goes without it, and its space is given back.
    seg.indexed = false;
    unlinkIfPresent(io, seg.indexFile);
  } finally {
    io.closeSync(fd);
  }
}

/**
 * Loads the index of `seg` if it is intact and describes this generation of the file. Returns
 * the file size it covers (the rest, if any, must be scanned), or -1 when it is unusable.
 */
export function readSegmentIndex(io: FsIo, seg: Segment, fileSize: number): number {
  const buf = readFile(io, seg.indexFile);
  if (!buf || indexState(buf, seg, fileSize) !== 'usable') return -1;
  const version = buf.readUInt32LE(4);
  const covered = buf.readDoubleLE(24);
  const sparse = buf.readUInt32LE(20) === 1;
  const span = buf.readUInt32LE(32);
  const slots = buf.readUInt32LE(36);
  const n = buf.readUInt32LE(40);
  let at = HEAD;
  seg.sparseTs = new Float64Array(n);
  at = take(buf, at, seg.sparseTs);
  seg.sparsePos = new Float64Array(n);
  at = take(buf, at, seg.sparsePos);
  seg.lens = new Uint32Array(Math.max(slots, 64));
  at = take(buf, at, seg.lens, slots * 4);
  if (sparse) {
    seg.present = new Uint32Array(slots);
    at = take(buf, at, seg.present);
  }
  seg.sparseSlot = new Uint32Array(n);
  at = take(buf, at, seg.sparseSlot);
  seg.spanChecksums = new Uint32Array(n);
  if (version >= 2) take(buf, at, seg.spanChecksums);
  // Span checksums are a layout 1 segment's; a layout 2 segment's chunks carry its own.
  seg.checksummedTo = version >= 2 && seg.layout === FRAME_CHECKSUM_LAYOUT ? covered : -1;
  seg.sparseCount = n;
  seg.span = span;
  seg.slots = slots;
  seg.deleted = new Uint8Array(Math.max(8, (slots + 7) >>> 3));
  seg.bytes = buf.readDoubleLE(48);
  seg.removedBytes = buf.readDoubleLE(56);
  seg.deletedBytes = seg.removedBytes;
  seg.deletedCount = span - slots;
  seg.firstTimestamp = buf.readDoubleLE(64);
  seg.lastTimestamp = buf.readDoubleLE(72);
  seg.fileSize = seg.size = covered;
  return covered;
}

/**
 * What opening makes of the index file `buf` of `seg` (whose file holds `fileSize` bytes):
 * `usable`; `stale` when it describes another generation or a longer file (a crash or a
 * compaction cut short: the segment is scanned); `damaged` when it fails its checksum or is not
 * an index (ignored and rebuilt from the segment, nothing lost).
 */
export function indexState(
  buf: Buffer,
  seg: Pick<Segment, 'firstOffset' | 'generation'>,
  fileSize: number,
): 'usable' | 'stale' | 'damaged' {
  if (buf.length < HEAD + 4) return 'damaged';
  const end = buf.length - 4;
  if (crc32(buf.subarray(0, end)) !== buf.readUInt32LE(end)) return 'damaged';
  const version = buf.readUInt32LE(4);
  if (buf.readUInt32LE(0) !== INDEX_MAGIC || (version !== 1 && version !== 2)) return 'damaged';
  const sparse = buf.readUInt32LE(20) === 1;
  const slots = buf.readUInt32LE(36);
  const n = buf.readUInt32LE(40);
  if (end !== HEAD + tablesSize(version, slots, n, sparse)) return 'damaged';
  if (buf.readDoubleLE(8) !== seg.firstOffset || buf.readUInt32LE(16) !== seg.generation) {
    return 'stale';
  }
  return buf.readDoubleLE(24) > fileSize ? 'stale' : 'usable';
}

type Table = Uint32Array | Float64Array;

/** Copies `length` bytes of a table into `buf` at `at`, little-endian. */
function put(buf: Buffer, at: number, array: Table, length: number): number {
  buf.set(new Uint8Array(array.buffer, array.byteOffset, length), at);
  if (!LITTLE_ENDIAN) swap(buf.subarray(at, at + length), array);
  return at + length;
}

/** Fills a table from `length` little-endian bytes of `buf` at `at`. */
function take(buf: Buffer, at: number, array: Table, length = array.byteLength): number {
  const bytes = buf.subarray(at, at + length);
  if (!LITTLE_ENDIAN) swap(bytes, array);
  new Uint8Array(array.buffer, array.byteOffset, length).set(bytes);
  return at + length;
}

function swap(bytes: Buffer, array: Table): void {
  if (array.BYTES_PER_ELEMENT === 8) bytes.swap64();
  else bytes.swap32();
}
