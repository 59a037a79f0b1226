/**
 * A log's list of its segment files (`~segments`, FORMAT.md): which segments should exist, so
 * that one lost (deleted, or gone with a file system's damage) is found and reported rather than
 * its records silently missing, and the offset below which every offset ever handed out lies, so
 * that a log that lost its tail does not hand the same offsets out again.
 *
 * Replaced atomically (fsynced before the rename unless the policy is `'never'`) before a
 * segment file is created and before one is unlinked, so the list never lacks a file that exists
 * and holds records, nor names one unlinked on purpose.
 */
import path from 'node:path';
import { DataLossError } from '../../errors.js';
import { crc32 } from './checksum.js';
import { type FsIo, readFile, replaceFile, unlinkIfPresent } from './io.js';
import { indexFileName, segmentFileName } from './segment.js';

export const LIST_FILE = '~segments';

const MAGIC = 0x474c514d; // "MQLG"
const VERSION = 1;
const HEADER = 24;

/** What `~segments` holds. */
export interface SegmentList {
  /** Ids of the segment files that should exist, ascending. */
  readonly ids: readonly number[];
  /** Every offset handed out is below this one. */
  readonly offsetsBelow: number;
}

/**
 * Reads the list: undefined when the file does not exist (a log of an older format version),
 * `'damaged'` when it is not a list as written (a bad checksum, a wrong size).
 */
export function readSegmentList(io: FsIo, file: string): SegmentList | 'damaged' | undefined {
  const bytes = readFile(io, file);
  if (!bytes) return undefined;
  if (bytes.length < HEADER + 4) return 'damaged';
  const count = bytes.readUInt32LE(16);
  if (
    bytes.readUInt32LE(0) !== MAGIC ||
    bytes.readUInt32LE(4) !== VERSION ||
    bytes.length !== HEADER + count * 8 + 4 ||
    crc32(bytes.subarray(0, bytes.length - 4)) !== bytes.readUInt32LE(bytes.length - 4)
  ) {
    return 'damaged';
  }
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push(bytes.readDoubleLE(HEADER + i * 8));
  return { ids, offsetsBelow: bytes.readDoubleLE(8) };
}

/** Replaces the list (see the header for when). */
export function writeSegmentList(io: FsIo, file: string, list: SegmentList, fsync: boolean): void {
  const bytes = Buffer.alloc(HEADER + list.ids.length * 8 + 4);
  bytes.writeUInt32LE(MAGIC, 0);
  bytes.writeUInt32LE(VERSION, 4);
  bytes.writeDoubleLE(list.offsetsBelow, 8);
  bytes.writeUInt32LE(list.ids.length, 16);
  for (const [i, id] of list.ids.entries()) bytes.writeDoubleLE(id, HEADER + i * 8);
  bytes.writeUInt32LE(crc32(bytes.subarray(0, bytes.length - 4)), bytes.length - 4);
  replaceFile(io, file, bytes, fsync);
}

/** What {@link checkSegmentList} found. */
export interface ListCheck {
  /** Ids of the segments to load, ascending. */
  readonly ids: readonly number[];
  /** The highest id found or listed (the next segment's id is past it). */
  readonly lastId: number;
  /** Whether the missing segments include the tail: the log then continues at `offsetsBelow`. */
  readonly tailLost: boolean;
  /** The list's bound on the offsets handed out; 0 without a list. */
  readonly offsetsBelow: number;
  /** Whether the list must be written again (missing, damaged, or naming a file that is gone). */
  readonly rewrite: boolean;
}

function missingSegment(file: string, log: string, tail: boolean, resumes: number): DataLossError {
  const next = tail
    ? `; the log continues at offset ${resumes}, past every offset it handed out`
    : '';
  return new DataLossError(
    'missing',
    `segment ${file} of log '${log}' is missing: the records it held are lost${next}`,
    { file },
  );
}

/**
 * Checks the segment files found in the directory `dir` of log `log` (`found`, ascending) against
 * its segment list: reports each listed one that is missing, finishes the unlinks a crash cut
 * short (files the list no longer names, below its last id), and says which ids to load and
 * where a lost tail leaves the offsets. A missing list is reported when `expected` (the log
 * wrote one before); a log of an older format version, without a list, gets one.
 */
export function checkSegmentList(
  io: FsIo,
  dir: string,
  log: string,
  found: readonly number[],
  expected: boolean,
  report: (loss: DataLossError) => void,
): ListCheck {
  const file = path.join(dir, LIST_FILE);
  const list = readSegmentList(io, file);
  const lastFound = found.at(-1) ?? 0;
  if (list === undefined || list === 'damaged') {
    if (list === 'damaged' || expected) {
      const how = list === 'damaged' ? 'damaged' : 'missing';
      report(
        new DataLossError(
          list === 'damaged' ? 'skipped' : 'missing',
          `${file} is ${how}: the segment files present are taken as the whole log, so a segment lost with it would not be found`,
          { file },
        ),
      );
    }
    return { ids: found, lastId: lastFound, tailLost: false, offsetsBelow: 0, rewrite: true };
  }
  const lastId = Math.max(lastFound, list.ids.at(-1) ?? 0);
  const present = new Set(found);
  const named = new Set(list.ids);
  const kept: number[] = [];
  let rewrite = false;
  for (const id of found) {
    if (named.has(id) || id > (list.ids.at(-1) ?? 0)) {
      kept.push(id);
      continue;
    }
    // Taken off the list before its unlink: the crash came in between.
    unlinkIfPresent(io, path.join(dir, segmentFileName(id)));
    unlinkIfPresent(io, path.join(dir, indexFileName(id)));
    rewrite = true;
  }
  const lastKept = kept.at(-1) ?? 0;
  let tailLost = false;
  for (const id of list.ids) {
    if (present.has(id)) continue;
    const tail = id > lastKept;
    tailLost ||= tail;
    const missing = path.join(dir, segmentFileName(id));
    report(missingSegment(missing, log, tail, list.offsetsBelow));
    rewrite = true;
  }
  return { ids: kept, lastId, tailLost, offsetsBelow: list.offsetsBelow, rewrite };
}
