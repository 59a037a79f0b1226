/**
 * A namespace's list of its logs (`~logs`, FORMAT.md): which log directories should exist, so
 * that one lost (deleted by hand, missing from a restore) is reported instead of being created
 * again empty on its next use, and which of them have a segment list (`~segments`), so that a
 * segment list lost with its segments is reported too.
 *
 * Replaced atomically (fsynced before its rename, and the directory after it, unless the policy
 * is `'never'`): after a log's directory is created and made durable, and before a log's
 * directory is removed, so the list never names a log that was never there, and a log present
 * but not listed is one whose creation or removal a crash cut short.
 */
import path from 'node:path';
import { DataLossError } from '../../errors.js';
import { crc32 } from './checksum.js';
import { type FsIo, fsyncDirSync, readFile, replaceFile } from './io.js';
import { encodeName, NAME_FILE } from './names.js';
import { asidePath, finishRemovals, setAside } from './removal.js';
import { LIST_FILE } from './segment-list.js';

export const LOG_LIST_FILE = '~logs';
const MAGIC = 0x4c4c514d; // "MQLL"
const VERSION = 1;
const HEADER = 16;
/** Entry flag: the log has its segment list, so a missing one is a loss. */
const HAS_SEGMENT_LIST = 1;

/** One log the list names. */
export interface LogEntry {
  /** The log's name (not its directory's). */
  readonly name: string;
  /** Whether the log has written its `~segments`. */
  readonly segmentList: boolean;
}

/**
 * Reads the list: undefined when the file does not exist, `'damaged'` when it is not a list as
 * written (a bad checksum, a wrong size).
 */
export function readLogList(io: FsIo, file: string): LogEntry[] | 'damaged' | undefined {
  const bytes = readFile(io, file);
  if (!bytes) return undefined;
  const end = bytes.length - 4;
  if (
    end < HEADER ||
    bytes.readUInt32LE(0) !== MAGIC ||
    bytes.readUInt32LE(4) !== VERSION ||
    crc32(bytes.subarray(0, end)) !== bytes.readUInt32LE(end)
  ) {
    return 'damaged';
  }
  const entries: LogEntry[] = [];
  let at = HEADER;
  for (let i = bytes.readUInt32LE(8); i > 0; i--) {
    if (at + 8 > end) return 'damaged';
    const flags = bytes.readUInt32LE(at);
    const length = bytes.readUInt32LE(at + 4);
    if (at + 8 + length > end) return 'damaged';
    const name = bytes.toString('utf8', at + 8, at + 8 + length);
    entries.push({ name, segmentList: (flags & HAS_SEGMENT_LIST) !== 0 });
    at += 8 + length;
  }
  return at === end ? entries : 'damaged';
}

/** Replaces the list and, when `fsync`, makes the replacement durable (see the header). */
export function writeLogList(
  io: FsIo,
  file: string,
  dir: string,
  entries: readonly LogEntry[],
  fsync: boolean,
): void {
  const names = entries.map((entry) => Buffer.from(entry.name, 'utf8'));
  const bytes = Buffer.alloc(HEADER + names.reduce((sum, name) => sum + 8 + name.length, 0) + 4);
  bytes.writeUInt32LE(MAGIC, 0);
  bytes.writeUInt32LE(VERSION, 4);
  bytes.writeUInt32LE(entries.length, 8);
  let at = HEADER;
  for (const [i, entry] of entries.entries()) {
    bytes.writeUInt32LE(entry.segmentList ? HAS_SEGMENT_LIST : 0, at);
    bytes.writeUInt32LE(names[i]!.length, at + 4);
    bytes.set(names[i]!, at + 8);
    at += 8 + names[i]!.length;
  }
  bytes.writeUInt32LE(crc32(bytes.subarray(0, at)), at);
  replaceFile(io, file, bytes, fsync);
  if (fsync) fsyncDirSync(io, dir);
}

function missingLog(file: string, log: string, namespace: string): DataLossError {
  return new DataLossError(
    'missing',
    `log '${log}' of namespace '${namespace}' is missing: its directory ${file} is gone, and the records it held are lost`,
    { file },
  );
}

/** The logs of one namespace, kept in its `~logs` (see the header). */
export class LogList {
  readonly #io: FsIo;
  readonly #dir: string;
  readonly #file: string;
  readonly #namespace: string;
  readonly #fsync: boolean;
  readonly #report: (loss: DataLossError) => void;
  /** Name to whether the log has its segment list. */
  readonly #entries = new Map<string, boolean>();

  /**
   * Reads the list of the namespace directory `dir`, holding the logs `present`: reports each
   * listed log that is missing (once: the list is rewritten without it), finishes the removals
   * a crash cut short, and lists the logs present but not listed. A missing list is a loss
   * when logs are present; without logs it is a new namespace, or one whose creation a crash
   * cut short.
   */
  constructor(
    io: FsIo,
    dir: string,
    namespace: string,
    present: readonly string[],
    fsync: boolean,
    report: (loss: DataLossError) => void,
  ) {
    this.#io = io;
    this.#dir = dir;
    this.#file = path.join(dir, LOG_LIST_FILE);
    this.#namespace = namespace;
    this.#fsync = fsync;
    this.#report = report;
    const removing = finishRemovals(io, dir);
    const stored = readLogList(io, this.#file);
    if (stored === 'damaged' || (stored === undefined && present.length > 0)) {
      report(
        new DataLossError(
          stored === 'damaged' ? 'skipped' : 'missing',
          `${this.#file} is ${stored === 'damaged' ? 'damaged' : 'missing'}: the logs present are taken as the whole namespace, so a log lost with it would not be found`,
          { file: this.#file },
        ),
      );
    }
    const here = new Set(present);
    let changed = !Array.isArray(stored);
    for (const { name, segmentList } of Array.isArray(stored) ? stored : []) {
      const logDir = path.join(dir, encodeName(name));
      if (!here.has(name) && io.isDirectorySync(logDir)) {
        // A hashed directory that lost the file of its name: the list still knows it.
        replaceFile(io, path.join(logDir, NAME_FILE), Buffer.from(name, 'utf8'), false);
        here.add(name);
      }
      if (here.has(name)) {
        this.#entries.set(name, segmentList);
        continue;
      }
      changed = true;
      if (!removing.has(encodeName(name))) report(missingLog(logDir, name, namespace));
    }
    let unlisted = false;
    for (const name of present) {
      if (this.#entries.has(name)) continue;
      changed = unlisted = true;
      const logDir = path.join(dir, encodeName(name));
      // A crash cut its creation short: what it holds is made durable before the list names it.
      if (fsync) fsyncDirSync(io, logDir);
      this.#entries.set(name, io.existsSync(path.join(logDir, LIST_FILE)));
    }
    if (unlisted && fsync) fsyncDirSync(io, dir);
    if (changed) this.#write();
  }

  /** Whether the log `name` has its segment list, so that a missing one is a loss. */
  hasSegmentList(name: string): boolean {
    return this.#entries.get(name) === true;
  }

  /**
   * Called before the log `name` is opened: reports it if it is listed but its directory is
   * gone (removed while the namespace was open), and forgets it then.
   */
  check(name: string, logDir: string): void {
    if (!this.#entries.has(name) || this.#io.isDirectorySync(logDir)) return;
    this.#report(missingLog(logDir, name, this.#namespace));
    this.#entries.delete(name);
    this.#write();
  }

  /**
   * Lists the log `name`, opened with its segment list written (in `logDir`): after its files and
   * its directory (created just before, if it is new) are durable, so the list never names a log,
   * or a segment list, that a power cut may lose.
   */
  opened(name: string, logDir: string): void {
    if (this.#entries.get(name) === true) return;
    if (this.#fsync) {
      fsyncDirSync(this.#io, logDir);
      if (!this.#entries.has(name)) fsyncDirSync(this.#io, this.#dir);
    }
    this.#entries.set(name, true);
    this.#write();
  }

  /**
   * Removes the log `name` and its directory `logDir`: renamed aside first, then unlisted, then
   * removed, so that a crash leaves the log whole and listed, or gone once the namespace opens.
   */
  remove(name: string, logDir: string): void {
    const io = this.#io;
    const listed = this.#entries.has(name) && io.isDirectorySync(logDir);
    const aside = listed ? setAside(io, logDir, this.#fsync) : asidePath(logDir);
    if (this.#entries.delete(name)) this.#write();
    io.rmSync(aside);
    io.rmSync(logDir);
  }

  #write(): void {
    const entries = [...this.#entries].map(([name, segmentList]) => ({ name, segmentList }));
    writeLogList(this.#io, this.#file, this.#dir, entries, this.#fsync);
  }
}
