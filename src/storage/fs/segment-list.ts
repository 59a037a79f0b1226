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
import { crc32 } from './checksum.js';
import { type FsIo, readFile, replaceFile } from './io.js';

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
