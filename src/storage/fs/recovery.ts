/**
 * Rebuilding a segment's tables from its records, for segments whose index file is missing or
 * stale. Records are checked a checksummed run at a time (a frame, or a chunk of them; see
 * frame.ts). Only the tail segment can legitimately end in a torn write (the process died
 * mid-append): there the first run that is cut short or fails its checksum, with nothing valid
 * after it, marks the end, and the caller cuts the file there. Anywhere else, and in the tail
 * when a valid run follows the bad one, a bad run is damage, reported as a `CorruptionError`
 * naming the file and byte position, never skipped in silence.
 */
import { recoveryChannel } from '../../diagnostics.js';
import { CorruptionError } from '../../errors.js';
import {
  BAD_CHECKSUM,
  checkRun,
  FRAME_HEADER,
  fieldsOf,
  frameByteLength,
  frameDelta,
  frameTimestamp,
  INCOMPLETE,
  u32,
} from './frame.js';
import { intactRunAfter, SEARCH_GAVE_UP } from './intact-run.js';
import { type FsIo, readFully } from './io.js';
import type { Segment } from './segment.js';

/** Bytes read at a time (more when a run is longer). */
const READ_BYTES = 1 << 20;

/** A corrupt record: names the file and position (and where intact runs resume, if known). */
export function corruptRecord(
  file: string,
  position: number,
  why = 'fails its checksum',
  end?: number,
): CorruptionError {
  const resumes = end === undefined ? '' : `; intact records follow at byte ${end}`;
  return new CorruptionError(`record in ${file} at byte ${position} ${why}${resumes}`, {
    file,
    position,
    end,
  });
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
  let buf = Buffer.allocUnsafe(Math.min(READ_BYTES, Math.max(fileSize - from, FRAME_HEADER)));
  let fields = fieldsOf(buf);
  let pos = from;
  while (pos < fileSize) {
    const n = readFully(io, fd, buf, 0, Math.min(buf.length, fileSize - pos), pos);
    let at = 0;
    let why = '';
    for (;;) {
      const r = checkRun(seg.layout, buf, at, n, fileSize);
      if (r > 0) {
        for (const end = at + r; at < end; ) {
          const delta = frameDelta(buf, at);
          // Checksummed, so not torn: damage, or bytes that are not this segment's.
          if (delta < seg.span) throw corruptRecord(seg.file, pos + at, 'is out of order');
          const length = FRAME_HEADER + buf.readUInt32LE(at);
          seg.add(delta, frameByteLength(buf, at), frameTimestamp(fields, at), pos + at, length);
          at += length;
        }
        continue;
      }
      if (r === INCOMPLETE && at < n) {
        // The run goes past the bytes read: past the file end, or just past this read.
        if (pos + n >= fileSize) why = 'is cut short';
        else if (at === 0) {
          buf = Buffer.allocUnsafe(buf.length * 2);
          fields = fieldsOf(buf);
        }
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

/**
 * A bad run at `pos`: the end of a torn tail, or corruption. A garbled length can state any run
 * end, so a torn tail is told from damage by searching every position after the bad one for a
 * valid run (intact-run.ts): confirmed records after it mean the bytes were damaged, not torn.
 */
function bad(
  io: FsIo,
  fd: number,
  seg: Segment,
  pos: number,
  fileSize: number,
  tail: boolean,
  why: string,
): number {
  if (!tail) throw corruptRecord(seg.file, pos, why);
  // The bytes from the bad run on, read once: searched for intact runs, then counted if cut.
  const rest = Buffer.allocUnsafe(fileSize - pos);
  const n = readFully(io, fd, rest, 0, rest.length, pos);
  const intact = intactRunAfter(seg.layout, rest, n);
  if (intact >= 0) throw corruptRecord(seg.file, pos, why, pos + intact);
  if (intact === SEARCH_GAVE_UP) {
    throw corruptRecord(seg.file, pos, `${why}, and whether intact records follow is not known`);
  }
  if (recoveryChannel.hasSubscribers) publishCut(seg.file, pos, rest, n, why);
  seg.fileSize = seg.size = pos;
  return pos;
}

/** Publishes the torn tail about to be cut on `mqlite:recovery`, with the frames begun in it. */
function publishCut(file: string, position: number, tail: Buffer, n: number, reason: string): void {
  let records = 0;
  // By their stated lengths; a partial header, or a length past the end, is the last one.
  for (let at = 0; at < n; records++)
    at += n - at < FRAME_HEADER ? n : FRAME_HEADER + u32(tail, at);
  recoveryChannel.publish({
    file,
    position,
    records,
    bytes: tail.length,
    reason,
    action: 'cut',
  });
}
