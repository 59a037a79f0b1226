/**
 * Record framing: a segment file's header and frames (layout in FORMAT.md). Frames carry their
 * offset delta, byte length and timestamp, so compaction copies surviving frames and keeps their
 * offsets. The generation changes whenever compaction rewrites a segment, which is how a stale
 * index file is told apart from a current one.
 *
 * Checksums: a layout 1 segment has one per frame, over its payload and header fields. A
 * layout 2 segment has one per chunk of frames, in the four bytes that end each frame's payload
 * (zero but in a chunk's last frame, so a frame's length never changes once written): one call
 * into zlib's native CRC per chunk costs less than summing each ~150-byte frame in JS, which was
 * the largest cost of an fs append. The checksum is taken from {@link CHUNK_RESIDUE}, the value
 * CRC-32 returns after a message followed by its own CRC, so any run of whole chunks checks with
 * one call: its CRC from the residue is the residue. A chunk ends with each write and before
 * each frame that starts a span of the sparse index (segment.ts), so that spans are whole chunks.
 */
import { crc32, crc32Range } from './checksum.js';

export const FRAME_HEADER = 24;
export const FILE_HEADER = 24;
const SEGMENT_MAGIC = 0x534c514d; // "MQLS"
/** The segment file layout written (a change to it is also a new FORMAT version). */
export const SEGMENT_LAYOUT = 2;
/** The layout whose frames each carry their own checksum; still read. */
export const FRAME_CHECKSUM_LAYOUT = 1;
/** Bit of a frame's delta word set on the last frame of a chunk (deltas stay below 2^31). */
const CHUNK_END = 0x80000000;
/** Bytes that end each layout 2 payload, holding a chunk's checksum in its last frame. */
export const CHUNK_CHECKSUM = 4;
/** CRC-32 of any message followed by its own CRC-32 (little-endian), from any start. */
export const CHUNK_RESIDUE = 0x2144df1c;

/** Result of {@link checkFrame} when the bytes end before the frame does. */
export const INCOMPLETE = -1;
/** Result of {@link checkFrame} when the frame fails its checksum. */
export const BAD_CHECKSUM = -2;

/**
 * Writes a layout 2 frame at `at` of `fields` around a record of `recordLength` bytes already
 * placed at `at + FRAME_HEADER`: its header (the checksum field of layout 1 is 0) and the zeroed
 * chunk checksum after the record. The frame takes `FRAME_HEADER + recordLength + CHUNK_CHECKSUM`.
 */
export function writeFrame(
  fields: DataView,
  at: number,
  recordLength: number,
  delta: number,
  byteLength: number,
  timestamp: number,
): void {
  fields.setUint32(at, recordLength + CHUNK_CHECKSUM, true);
  fields.setUint32(at + 4, 0, true);
  fields.setUint32(at + 8, delta, true);
  fields.setUint32(at + 12, byteLength, true);
  fields.setFloat64(at + 16, timestamp, true);
  fields.setUint32(at + FRAME_HEADER + recordLength, 0, true);
}

function putU32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value;
  bytes[at + 1] = value >>> 8;
  bytes[at + 2] = value >>> 16;
  bytes[at + 3] = value >>> 24;
}

/** The checksum a layout 1 frame of `total` bytes at `at` carries: payload, then header fields. */
function frameChecksum(bytes: Uint8Array, at: number, total: number): number {
  const payloadCrc = crc32Range(bytes, at + FRAME_HEADER, at + total);
  return crc32Range(bytes, at + 8, at + FRAME_HEADER, payloadCrc);
}

/**
 * Makes the frame at `last` the end of the chunk of frames `buf[start, end)` (layout 2): flags it
 * and writes the chunk's checksum into its last four bytes.
 */
export function endChunk(buf: Uint8Array, start: number, last: number, end: number): void {
  buf[last + 11] = buf[last + 11]! | (CHUNK_END >>> 24);
  putU32(buf, end - CHUNK_CHECKSUM, crc32Range(buf, start, end - CHUNK_CHECKSUM, CHUNK_RESIDUE));
}

/**
 * Copies the frame at `from[at]`, of a segment of `layout`, to `to[out]` as a plain layout 2
 * frame (no chunk flag, checksums zero); returns its length. Compaction moves frames into new
 * chunks this way.
 */
export function copyFrame(
  layout: number,
  from: Buffer,
  at: number,
  to: Buffer,
  out: number,
): number {
  const record = FRAME_HEADER + u32(from, at) - frameOverhead(layout);
  from.copy(to, out, at, at + FRAME_HEADER + record);
  putU32(to, out, record + CHUNK_CHECKSUM);
  putU32(to, out + 4, 0);
  to[out + 11] = to[out + 11]! & ~(CHUNK_END >>> 24);
  putU32(to, out + FRAME_HEADER + record, 0);
  return FRAME_HEADER + record + CHUNK_CHECKSUM;
}

export function isChunkEnd(bytes: Uint8Array, at: number): boolean {
  return (bytes[at + 11]! & (CHUNK_END >>> 24)) !== 0;
}

/** Bytes of a frame of a segment of `layout` that are not its record. */
export function frameOverhead(layout: number): number {
  return FRAME_HEADER + (layout === FRAME_CHECKSUM_LAYOUT ? 0 : CHUNK_CHECKSUM);
}

/**
 * Whether the bytes `[from, to)`, whole chunks of a layout 2 segment, are as written: one call,
 * however many chunks.
 */
export function checkChunks(bytes: Uint8Array, from: number, to: number): boolean {
  return crc32Range(bytes, from, to, CHUNK_RESIDUE) === CHUNK_RESIDUE;
}

/**
 * Checks the smallest run of frames at `bytes[at]` that carries a checksum in a segment of
 * `layout` (a frame in layout 1, a chunk in layout 2), `end` being the end of valid bytes:
 * returns the run's length, {@link INCOMPLETE} or {@link BAD_CHECKSUM}. `maxPayload` bounds a
 * garbled length.
 */
export function checkRun(
  layout: number,
  bytes: Uint8Array,
  at: number,
  end: number,
  maxPayload: number,
): number {
  const next = statedRunEnd(layout, bytes, at, end, maxPayload);
  if (next < 0) return next;
  const good =
    layout === FRAME_CHECKSUM_LAYOUT
      ? frameChecksum(bytes, at, next - at) === u32(bytes, at + 4)
      : checkChunks(bytes, at, next);
  return good ? next - at : BAD_CHECKSUM;
}

/**
 * Where the run at `bytes[at]` ends, by the lengths and flags its frames state (unchecked), or
 * {@link INCOMPLETE} / {@link BAD_CHECKSUM} as {@link checkRun}.
 */
export function statedRunEnd(
  layout: number,
  bytes: Uint8Array,
  at: number,
  end: number,
  maxPayload: number,
): number {
  for (let frame = at; ; ) {
    if (end - frame < FRAME_HEADER) return INCOMPLETE;
    const length = u32(bytes, frame);
    if (length > maxPayload) return BAD_CHECKSUM;
    const next = frame + FRAME_HEADER + length;
    if (next > end) return INCOMPLETE;
    if (layout === FRAME_CHECKSUM_LAYOUT || isChunkEnd(bytes, frame)) return next;
    frame = next;
  }
}

// Field readers work on any Uint8Array (a Buffer's accessors would need a Buffer per window).

/** Little-endian u32 at `at`. */
export function u32(bytes: Uint8Array, at: number): number {
  return (
    (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0
  );
}

export function frameDelta(bytes: Uint8Array, at: number): number {
  return u32(bytes, at + 8) & ~CHUNK_END;
}
export function frameByteLength(bytes: Uint8Array, at: number): number {
  return u32(bytes, at + 12);
}

/** Whether typed arrays are little-endian here, as the files are (else their bytes are swapped). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * A DataView of `bytes`, for the wide fields of frame headers. The optimizing compiler turns
 * its reads and writes into single loads and stores; building a double from two words written to
 * a scratch array instead stalls on the store-to-load forwarding (19 ns a record read here).
 */
export function fieldsOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The timestamp of the frame at `at`, from the fields of the bytes holding it. */
export function frameTimestamp(fields: DataView, at: number): number {
  return fields.getFloat64(at + 16, true);
}

/** A segment file header. */
export function fileHeader(firstOffset: number, generation: number): Buffer {
  const buf = Buffer.alloc(FILE_HEADER);
  buf.writeUInt32LE(SEGMENT_MAGIC, 0);
  buf.writeUInt32LE(SEGMENT_LAYOUT, 4);
  buf.writeDoubleLE(firstOffset, 8);
  buf.writeUInt32LE(generation, 16);
  buf.writeUInt32LE(crc32(buf.subarray(0, 20)), 20);
  return buf;
}

/**
 * Parses a segment file header; undefined when it is not one. A header of an unknown layout is
 * returned with its `layout` (the caller refuses it): its fields may mean something else.
 */
export function parseFileHeader(
  buf: Buffer,
): { layout: number; firstOffset: number; generation: number } | undefined {
  if (buf.length < FILE_HEADER || buf.readUInt32LE(0) !== SEGMENT_MAGIC) return undefined;
  if (crc32(buf.subarray(0, 20)) !== buf.readUInt32LE(20)) return undefined;
  return {
    layout: buf.readUInt32LE(4),
    firstOffset: buf.readDoubleLE(8),
    generation: buf.readUInt32LE(16),
  };
}
