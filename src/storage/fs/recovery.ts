/**
 * Rebuilding a segment's tables from its records, for segments whose index file is missing or
 * stale. Records are checked a checksummed run at a time (a frame, or a chunk of them; see
 * frame.ts). Only the tail segment can legitimately end in a torn write (the process died
 * mid-append): there the first run that is cut short or fails its checksum, with nothing valid
 * after it, marks the end, and the caller cuts the file there. Anywhere else, and in the tail
 * when a valid run follows the bad one, a bad run is damage, reported as a `CorruptionError`
 * naming the file and byte position, never skipped in silence.
 *
 * A log opens its segments with {@link loadSegments}, each from its index, scanning what the
 * index does not cover, and reports a lost marks file ({@link reportLostMarks}).
 */
import path from 'node:path';
import { recoveryChannel } from '../../diagnostics.js';
import { CorruptionError, DataLossError } from '../../errors.js';
import {
  BAD_CHECKSUM,
  checkRun,
  FILE_HEADER,
  FRAME_CHECKSUM_LAYOUT,
  FRAME_HEADER,
  fieldsOf,
  frameByteLength,
  frameDelta,
  frameTimestamp,
  INCOMPLETE,
  parseFileHeader,
  SEGMENT_LAYOUT,
  u32,
} from './frame.js';
import { intactRunAfter, SEARCH_GAVE_UP } from './intact-run.js';
import { type FsIo, readFully } from './io.js';
import { MARKS_FILE } from './marks.js';
import { Segment, segmentFileName } from './segment.js';
import { readSegmentIndex, writeSegmentIndex } from './segment-index.js';
import { LIST_FILE } from './segment-list.js';

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

function tornWrite(file: string, end: number, size: number): DataLossError {
  return new DataLossError(
    'torn-write',
    `cut ${size - end} bytes of an unconfirmed write off the end of ${file} at byte ${end}`,
    { file, position: end, end: size, bytes: size - end },
  );
}

/**
 * Loads segment `id` of the log in `dir` from its index, scanning what the index does not
 * cover. The `tail` segment (the last) may end in a torn write, which is cut off and reported
 * to `report`. A sealed segment found without a usable index gets one.
 */
export function loadSegment(
  io: FsIo,
  dir: string,
  id: number,
  tail: boolean,
  report: (loss: DataLossError) => void,
): Segment {
  const file = path.join(dir, segmentFileName(id));
  const fd = io.openSync(file, tail ? 'r+' : 'r');
  try {
    const head = Buffer.alloc(FILE_HEADER);
    const size = io.sizeSync(fd);
    const header = parseFileHeader(head.subarray(0, readFully(io, fd, head, 0, FILE_HEADER, 0)));
    if (!header) throw new CorruptionError(`segment ${file} has no valid header`);
    if (header.layout !== SEGMENT_LAYOUT && header.layout !== FRAME_CHECKSUM_LAYOUT) {
      throw new CorruptionError(
        `segment ${file} has layout ${header.layout}, expected ${FRAME_CHECKSUM_LAYOUT} or ${SEGMENT_LAYOUT}`,
      );
    }
    const seg = new Segment(dir, id, header.firstOffset, header.generation, header.layout);
    seg.indexed = true; // whether or not it is usable, an index file may exist
    const covered = readSegmentIndex(io, seg, size);
    if (covered < size) {
      const end = scanSegment(io, fd, seg, Math.max(covered, FILE_HEADER), size, tail);
      if (end < size) {
        report(tornWrite(file, end, size));
        io.ftruncateSync(fd, end);
      }
      if (covered <= FILE_HEADER) seg.verifiedTo = end;
    }
    if (!tail) {
      seg.trim();
      if (covered < size) writeSegmentIndex(io, seg);
    }
    return seg;
  } finally {
    io.closeSync(fd);
  }
}

/**
 * Loads the listed segments `ids` of the log in `dir`, oldest first, with {@link loadSegment};
 * the last is the tail. Segments whose offsets overlap are corruption.
 */
export function loadSegments(
  io: FsIo,
  dir: string,
  ids: readonly number[],
  report: (loss: DataLossError) => void,
  into: Segment[],
): void {
  for (const [i, id] of ids.entries()) {
    const seg = loadSegment(io, dir, id, i === ids.length - 1, report);
    const prev = into.at(-1);
    if (prev && seg.firstOffset <= prev.lastOffset) {
      throw new CorruptionError(`segment ${seg.file} overlaps ${prev.file}`);
    }
    into.push(seg);
  }
}

/**
 * Whether the log in `dir` lost its marks file: a log with its segment list is one opened
 * before, which created its marks file then. Asked before the list is written.
 */
export function marksFileLost(io: FsIo, dir: string): boolean {
  return io.existsSync(path.join(dir, LIST_FILE)) && !io.existsSync(path.join(dir, MARKS_FILE));
}

/** Reports the lost marks file of the log in `dir` if any of its segments held records. */
export function reportLostMarks(
  dir: string,
  segs: readonly Segment[],
  report: (loss: DataLossError) => void,
): void {
  if (!segs.some((seg) => seg.span > 0)) return;
  const marksFile = path.join(dir, MARKS_FILE);
  report(
    new DataLossError(
      'missing',
      `${marksFile} is missing: the deletions (acks) it held are lost, so records deleted before may be delivered again`,
      { file: marksFile },
    ),
  );
}
