/**
 * Rebuilding a segment's tables from its records, for segments whose index file is missing or
 * stale. Only the tail segment can legitimately end in a torn write (the process died
 * mid-append): there the first frame that is cut short or fails its checksum, with nothing
 * valid after it, marks the end, and the caller cuts the file there. Anywhere else, and in the
 * tail when a valid frame follows the bad one, a bad frame is damage, reported as a
 * `CorruptionError` naming the file and byte position, never skipped in silence.
 */
import { CorruptionError } from '../../errors.js';
import {
  BAD_CHECKSUM,
  checkFrame,
  FRAME_HEADER,
  frameByteLength,
  frameDelta,
  frameTimestamp,
  INCOMPLETE,
} from './frame.js';
import { type FsIo, readFully } from './io.js';
import type { Segment } from './segment.js';

const CHUNK = 1 << 20;

/** A corrupt record: names the file and position. */
export function corruptRecord(file: string, position: number, why = 'fails its checksum') {
  return new CorruptionError(`record in ${file} at byte ${position} ${why}`);
}

/**
 * Adds the records of `seg`'s file from `from` to `fileSize` to its tables, and their bytes to
 * its span checksums once verified. In `tail` mode a torn end is accepted; the returned position
 * is where valid records end (the new file size).
 */
export function scanSegment(
  io: FsIo,
  fd: number,
  seg: Segment,
  from: number,
  fileSize: number,
  tail: boolean,
): number {
  let buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(fileSize - from, FRAME_HEADER)));
  let pos = from;
  while (pos < fileSize) {
    const n = readFully(io, fd, buf, 0, Math.min(buf.length, fileSize - pos), pos);
    let at = 0;
    let why = '';
    for (;;) {
      const r = checkFrame(buf, at, n, fileSize);
      if (r > 0) {
        const delta = frameDelta(buf, at);
        if (delta < seg.span) {
          why = 'is out of order';
          break;
        }
        seg.add(delta, frameByteLength(buf, at), frameTimestamp(buf, at), pos + at, r);
        at += r;
        continue;
      }
      if (r === INCOMPLETE && at < n) {
        // The frame goes past the bytes read: past the file end, or just past this chunk.
        const total = n - at >= FRAME_HEADER ? FRAME_HEADER + buf.readUInt32LE(at) : FRAME_HEADER;
        if (pos + at + total > fileSize) why = 'is cut short';
        else if (at === 0) buf = Buffer.allocUnsafe(Math.max(total, buf.length * 2));
      } else if (r === BAD_CHECKSUM) {
        why = 'fails its checksum';
      }
      break;
    }
    seg.checksum(buf, 0, at, pos);
    if (why) return bad(io, fd, seg, pos + at, fileSize, tail, why);
    if (at === 0 && n === 0) break;
    pos += at;
  }
  seg.fileSize = seg.size = pos;
  return pos;
}

/** A bad frame at `pos`: the end of a torn tail, or corruption. */
function bad(
  io: FsIo,
  fd: number,
  seg: Segment,
  pos: number,
  fileSize: number,
  tail: boolean,
  why: string,
): number {
  if (!tail || validFrameFollows(io, fd, pos, fileSize)) throw corruptRecord(seg.file, pos, why);
  seg.fileSize = seg.size = pos;
  return pos;
}

/** Whether the frame after the (bad) one at `pos`, by its stated length, is valid. */
function validFrameFollows(io: FsIo, fd: number, pos: number, fileSize: number): boolean {
  const head = Buffer.alloc(FRAME_HEADER);
  if (readFully(io, fd, head, 0, FRAME_HEADER, pos) < FRAME_HEADER) return false;
  const next = pos + FRAME_HEADER + head.readUInt32LE(0);
  if (next + FRAME_HEADER > fileSize) return false;
  if (readFully(io, fd, head, 0, FRAME_HEADER, next) < FRAME_HEADER) return false;
  const total = FRAME_HEADER + head.readUInt32LE(0);
  if (next + total > fileSize) return false;
  const frame = Buffer.allocUnsafe(total);
  readFully(io, fd, frame, 0, total, next);
  return checkFrame(frame, 0, total, total) > 0;
}
