/**
 * Record framing: a segment file's header and frames (layout in FORMAT.md). The frame's crc
 * covers the payload and the header fields after the crc (offset delta, byte length,
 * timestamp), so a frame is self-describing: compaction copies surviving frames verbatim and
 * keeps their offsets. The generation changes whenever compaction rewrites a segment, which is
 * how a stale index file is told apart from a current one.
 */
import { crc32, crc32Range } from './checksum.js';

export const FRAME_HEADER = 24;
export const FILE_HEADER = 24;
const SEGMENT_MAGIC = 0x534c514d; // "MQLS"
/** Version of the segment file layout (a change to it is also a new FORMAT version). */
export const SEGMENT_VERSION = 1;

/** Result of {@link checkFrame} when the bytes end before the frame does. */
export const INCOMPLETE = -1;
/** Result of {@link checkFrame} when the frame fails its checksum. */
export const BAD_CHECKSUM = -2;

/**
 * Writes a frame header at `at` for a payload of `payloadLength` bytes already placed at
 * `at + FRAME_HEADER`.
 */
export function writeFrame(
  buf: Uint8Array,
  at: number,
  payloadLength: number,
  delta: number,
  byteLength: number,
  timestamp: number,
): void {
  // By hand: Buffer's checked accessors cost more than the stores (this runs per append).
  putU32(buf, at, payloadLength);
  putU32(buf, at + 8, delta);
  putU32(buf, at + 12, byteLength);
  scratch[0] = timestamp;
  const to = at + 16;
  if (LITTLE_ENDIAN) for (let i = 0; i < 8; i++) buf[to + i] = scratchBytes[i]!;
  else for (let i = 0; i < 8; i++) buf[to + i] = scratchBytes[7 - i]!;
  putU32(buf, at + 4, frameChecksum(buf, at, FRAME_HEADER + payloadLength));
}

function putU32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value;
  bytes[at + 1] = value >>> 8;
  bytes[at + 2] = value >>> 16;
  bytes[at + 3] = value >>> 24;
}

/** The checksum a frame of `total` bytes at `at` should carry: payload, then header fields. */
function frameChecksum(bytes: Uint8Array, at: number, total: number): number {
  const payloadCrc = crc32Range(bytes, at + FRAME_HEADER, at + total);
  return crc32Range(bytes, at + 8, at + FRAME_HEADER, payloadCrc);
}

/**
 * Checks the frame at `bytes[at]` with `end` the end of valid bytes: returns the frame's total
 * length, {@link INCOMPLETE} or {@link BAD_CHECKSUM}. `maxPayload` bounds a garbled length.
 */
export function checkFrame(bytes: Uint8Array, at: number, end: number, maxPayload: number): number {
  if (end - at < FRAME_HEADER) return INCOMPLETE;
  const length = u32(bytes, at);
  if (length > maxPayload) return BAD_CHECKSUM;
  const total = FRAME_HEADER + length;
  if (end - at < total) return INCOMPLETE;
  return frameChecksum(bytes, at, total) === u32(bytes, at + 4) ? total : BAD_CHECKSUM;
}

// Field readers work on any Uint8Array (a Buffer's accessors would need a Buffer per window).

/** Little-endian u32 at `at`. */
export function u32(bytes: Uint8Array, at: number): number {
  return (
    (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0
  );
}

export function frameDelta(bytes: Uint8Array, at: number): number {
  return u32(bytes, at + 8);
}
export function frameByteLength(bytes: Uint8Array, at: number): number {
  return u32(bytes, at + 12);
}

const scratch = new Float64Array(1);
const scratchBytes = new Uint8Array(scratch.buffer);
const scratchWords = new Uint32Array(scratch.buffer);
/** Whether typed arrays are little-endian here, as the files are (else their bytes are swapped). */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export function frameTimestamp(bytes: Uint8Array, at: number): number {
  // Two words rather than eight bytes: this runs once per record read.
  const low = LITTLE_ENDIAN ? 0 : 1;
  scratchWords[low] = u32(bytes, at + 16);
  scratchWords[1 - low] = u32(bytes, at + 20);
  return scratch[0]!;
}

/** A segment file header. */
export function fileHeader(firstOffset: number, generation: number): Buffer {
  const buf = Buffer.alloc(FILE_HEADER);
  buf.writeUInt32LE(SEGMENT_MAGIC, 0);
  buf.writeUInt32LE(SEGMENT_VERSION, 4);
  buf.writeDoubleLE(firstOffset, 8);
  buf.writeUInt32LE(generation, 16);
  buf.writeUInt32LE(crc32(buf.subarray(0, 20)), 20);
  return buf;
}

/**
 * Parses a segment file header; undefined when it is not one. A header of another version is
 * returned with its `version` (the caller refuses it): its fields may mean something else.
 */
export function parseFileHeader(
  buf: Buffer,
): { version: number; firstOffset: number; generation: number } | undefined {
  if (buf.length < FILE_HEADER || buf.readUInt32LE(0) !== SEGMENT_MAGIC) return undefined;
  if (crc32(buf.subarray(0, 20)) !== buf.readUInt32LE(20)) return undefined;
  return {
    version: buf.readUInt32LE(4),
    firstOffset: buf.readDoubleLE(8),
    generation: buf.readUInt32LE(16),
  };
}
