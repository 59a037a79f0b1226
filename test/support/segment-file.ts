import fs from 'node:fs';
import { crc32 } from 'node:zlib';

/** A frame of a segment file as read from its bytes (layout in src/storage/fs/FORMAT.md). */
export interface FrameOnDisk {
  /** File position of the frame. */
  pos: number;
  /** Total length, header included. */
  length: number;
  offset: number;
  /** Whether it ends a checksum chunk (version 2 layout). */
  endsChunk: boolean;
}

/** The frames of a segment file, parsed without the adapter, so tests can aim at one. */
export function framesOf(file: string): FrameOnDisk[] {
  const bytes = fs.readFileSync(file);
  const firstOffset = bytes.readDoubleLE(8);
  const frames: FrameOnDisk[] = [];
  for (let pos = 24; pos + 24 <= bytes.length; ) {
    const length = 24 + bytes.readUInt32LE(pos);
    const word = bytes.readUInt32LE(pos + 8);
    frames.push({
      pos,
      length,
      offset: firstOffset + (word & 0x7fffffff),
      endsChunk: word >= 0x80000000,
    });
    pos += length;
  }
  return frames;
}

/** File position of the checksum chunk that holds the frame of `offset`. */
export function chunkStartOf(file: string, offset: number): number {
  let start = 24;
  for (const frame of framesOf(file)) {
    if (frame.offset === offset) return start;
    if (frame.endsChunk) start = frame.pos + frame.length;
  }
  throw new Error(`no frame of offset ${offset} in ${file}`);
}

/**
 * Rewrites a segment file of layout 2 in layout 1 (a checksum per frame, no chunk checksums), as
 * format 1 and 2 code wrote it, for tests of the data those versions left.
 */
export function toLayout1(file: string): void {
  const bytes = fs.readFileSync(file);
  const frames = [bytes.subarray(0, 24)];
  for (const { pos, length } of framesOf(file)) {
    const frame = Buffer.from(bytes.subarray(pos, pos + length - 4));
    frame.writeUInt32LE(length - 28, 0);
    frame.writeUInt32LE(frame.readUInt32LE(8) & 0x7fffffff, 8);
    frame.writeUInt32LE(crc32(frame.subarray(8, 24), crc32(frame.subarray(24))), 4);
    frames.push(frame);
  }
  const rewritten = Buffer.concat(frames);
  rewritten.writeUInt32LE(1, 4);
  rewritten.writeUInt32LE(crc32(rewritten.subarray(0, 20)), 20);
  fs.writeFileSync(file, rewritten);
}
