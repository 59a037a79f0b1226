/**
 * The metadata store of one namespace (`~meta`, layout in FORMAT.md): an in-memory map,
 * persisted as an append-only file of checksummed JSON records, `[key, value]` or `[key]` for a
 * deletion. Only the latest value of each key changed in a tick is written, so a
 * consumer offset stored on every ack costs one record per batch. The file is compacted (rewritten
 * with the live entries, atomically) on open and whenever it has grown well past them; the file it
 * replaces is kept as `~meta.prev`, restored from when `~meta` is missing. Reading survives
 * damage (see meta-records.ts): a torn last record or damaged bytes are reported and skipped, and
 * the file as found is kept as `~meta.damaged` before the rewrite, so nothing is cut away unseen.
 */

import path from 'node:path';
import { ClosedError, DataLossError, isNoSpace } from '../../errors.js';
import { frozenJsonCopy } from '../json-value.js';
import type { JsonValue, MetaStore } from '../types.js';
import { type FsyncPolicy, SyncScheduler } from './durability.js';
import type { FileHandle, Handles } from './handles.js';
import {
  allDone,
  type FsIo,
  type FsyncJob,
  fsyncDir,
  readFile,
  replaceFile,
  replaceFileOpen,
  writeFully,
} from './io.js';
import { type MetaRead, metaRecord, readMetaRecords } from './meta-records.js';

/** The version a rewrite replaced, and the file as found when recovery skipped part of it. */
export const PREVIOUS_SUFFIX = '.prev';
export const DAMAGED_SUFFIX = '.damaged';
/** Records in the file beyond which it is compacted, if they outnumber live keys fourfold. */
const COMPACT_AFTER = 1024;

export class FsMetaStore implements MetaStore {
  readonly #io: FsIo;
  readonly #file: string;
  readonly #fsync: boolean;
  readonly #map = new Map<string, JsonValue>();
  #sorted: string[] | null = null;
  /** Keys changed since the last write: their current value (or absence) is written. */
  readonly #dirty = new Set<string>();
  readonly #scheduler: SyncScheduler;
  readonly #isClosed: () => boolean;
  readonly #what: string;
  readonly #handle: FileHandle;
  #size = 0;
  #records = 0;
  /** A rewrite renamed a file: the directory needs an fsync too. */
  #dirUnsynced = false;
  readonly #report: (loss: DataLossError) => void;
  /** The file on disk is whole (not one recovery read around damage): worth keeping as previous. */
  #intact = true;
  /** What opening found damaged or missing (see `MetaStore.damage`). */
  readonly damage: DataLossError[] = [];
  /**
   * The rewrite opening wanted could not be written (a full disk): the next write rewrites the
   * file instead of appending, keeping first the damaged file as found (`#keep`) if any.
   */
  #rewriteDue = false;
  #keep: Buffer | undefined;
  /** An append failed: part of it may be in the file past `#size`, cut before the next one. */
  #appendFailed = false;

  /**
   * @param expected whether the namespace holds data, so that a missing file is a loss to report.
   */
  constructor(
    handles: Handles,
    file: string,
    policy: FsyncPolicy,
    what: string,
    isClosed: () => boolean,
    report: (loss: DataLossError) => void,
    expected: boolean,
  ) {
    this.#io = handles.io;
    this.#handle = handles.file(file, 'r+');
    // Every report is made while opening.
    this.#report = (loss) => {
      this.damage.push(loss);
      report(loss);
    };
    this.#file = file;
    this.#fsync = policy !== 'never';
    this.#what = what;
    this.#isClosed = isClosed;
    this.#scheduler = new SyncScheduler(policy, {
      flush: () => this.#flush(),
      fsync: (done) => this.#fsyncFile(done),
      // A write the disk refused is done again in full (see #flush).
      redoesFailedFlush: true,
    });
    this.#load(expected);
  }

  get(key: string): JsonValue | undefined {
    this.#check();
    return this.#map.get(key);
  }

  set(key: string, value: JsonValue): void {
    this.#check();
    if (typeof key !== 'string') throw new TypeError('metadata key must be a string');
    const frozen = frozenJsonCopy(value);
    if (!this.#map.has(key)) this.#sorted = null;
    this.#map.set(key, frozen);
    this.#dirty.add(key);
    this.#scheduler.touch();
  }

  delete(key: string): void {
    this.#check();
    if (!this.#map.delete(key)) return;
    this.#sorted = null;
    this.#dirty.add(key);
    this.#scheduler.touch();
  }

  entries(prefix = ''): IterableIterator<[string, JsonValue]> {
    this.#check();
    if (typeof prefix !== 'string') throw new TypeError('metadata prefix must be a string');
    this.#sorted ??= [...this.#map.keys()].sort();
    const keys = this.#sorted;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    const picked: Array<[string, JsonValue]> = [];
    for (let i = lo; i < keys.length && keys[i]!.startsWith(prefix); i++) {
      picked.push([keys[i]!, this.#map.get(keys[i]!)!]);
    }
    return picked[Symbol.iterator]();
  }

  sync(): Promise<void> {
    if (this.#isClosed()) return Promise.reject(new ClosedError(`${this.#what} is closed`));
    return this.#scheduler.sync();
  }

  /** Writes and fsyncs what is pending, then releases the file. */
  async close(): Promise<void> {
    try {
      if (!this.#scheduler.failure) await this.#scheduler.drain();
    } finally {
      this.destroy();
    }
  }

  /** Releases the file without writing (the namespace is being deleted). */
  destroy(): void {
    this.#scheduler.stop(new ClosedError(`${this.#what} is closed`));
    this.#handle.release();
  }

  #check(): void {
    if (this.#isClosed()) throw new ClosedError(`${this.#what} is closed`);
  }

  #load(expected: boolean): void {
    let buf = readFile(this.#io, this.#file);
    let restored = false;
    if (!buf) {
      buf = readFile(this.#io, this.#file + PREVIOUS_SUFFIX);
      restored = buf !== undefined;
      if (restored || expected) {
        this.#report(
          new DataLossError(
            restored ? 'restored' : 'missing',
            restored
              ? `${this.#file} is missing; restored from ${this.#file}${PREVIOUS_SUFFIX}, without the changes made since it was replaced`
              : `${this.#file} is missing; the metadata of ${this.#what} is lost`,
            { file: this.#file },
          ),
        );
      }
    }
    const read = buf ? readMetaRecords(buf, (key, value) => this.#apply(key, value)) : undefined;
    if (buf && read && (read.tornAt >= 0 || read.damaged.length > 0)) this.#keepDamaged(buf, read);
    // Rewriting on open both compacts and drops a torn tail.
    if (!buf || restored || !this.#intact || read!.records > this.#map.size) {
      // The file on disk is the one just read (or none): the rewrite need not read it again.
      this.#rewriteWhenPossible(restored ? undefined : buf);
    } else {
      this.#size = buf.length;
      this.#records = read!.records;
    }
  }

  /**
   * Rewrites the file now or, when the disk is full, with the next write: opening reads a full
   * disk's data without needing to write. `current`: the file's bytes (undefined: no file).
   */
  #rewriteWhenPossible(current: Buffer | undefined): void {
    try {
      this.#rewrite(current);
    } catch (error) {
      if (!isNoSpace(error)) throw error;
      this.#rewriteDue = true;
    }
  }

  #apply(key: string, value: JsonValue | undefined): void {
    if (value === undefined) this.#map.delete(key);
    else this.#map.set(key, frozenJsonCopy(value));
  }

  /**
   * Reports what recovery skipped or cut, keeping the file as found beside it (before the
   * rewrite that drops the damage).
   */
  #keepDamaged(buf: Buffer, read: MetaRead): void {
    this.#intact = false;
    const kept = this.#file + DAMAGED_SUFFIX;
    this.#keep = buf;
    for (const { position, end } of read.damaged) {
      this.#report(
        new DataLossError(
          'skipped',
          `${this.#file}: bytes ${position} to ${end} are damaged and were skipped (${this.#map.size} entries read around them; the file as found is kept as ${kept})`,
          { file: this.#file, position, end, bytes: end - position },
        ),
      );
    }
    if (read.tornAt >= 0) {
      this.#report(
        new DataLossError(
          'torn-write',
          `${this.#file}: cut ${buf.length - read.tornAt} bytes of an unconfirmed write at byte ${read.tornAt} (the file as found is kept as ${kept})`,
          {
            file: this.#file,
            position: read.tornAt,
            end: buf.length,
            bytes: buf.length - read.tornAt,
          },
        ),
      );
    }
  }

  #flush(): void {
    if (this.#dirty.size === 0) return;
    const limit = Math.max(COMPACT_AFTER, this.#map.size * 4);
    if (this.#rewriteDue || this.#records + this.#dirty.size > limit) {
      this.#rewrite(this.#intact ? readFile(this.#io, this.#file) : undefined);
      this.#dirty.clear();
      return;
    }
    const parts: Buffer[] = [];
    for (const key of this.#dirty) parts.push(metaRecord(key, this.#map.get(key)));
    const data = Buffer.concat(parts);
    const fd = this.#handle.fd;
    // What a refused append left past the end is cut first (cutting needs no space).
    if (this.#appendFailed) this.#io.ftruncateSync(fd, this.#size);
    this.#appendFailed = true;
    writeFully(this.#io, fd, data, 0, data.length, this.#size);
    this.#appendFailed = false;
    this.#size += data.length;
    this.#records += parts.length;
    this.#dirty.clear();
    this.#handle.wrote();
  }

  /**
   * Replaces the file with the live entries. `current`: the bytes of the file it replaces
   * (undefined when there is none), kept as the previous version while that file is intact.
   */
  #rewrite(current: Buffer | undefined): void {
    if (this.#keep) {
      replaceFile(this.#io, this.#file + DAMAGED_SUFFIX, this.#keep, false);
      this.#keep = undefined;
    }
    if (this.#intact && current) {
      replaceFile(this.#io, this.#file + PREVIOUS_SUFFIX, current, false);
    }
    const parts: Buffer[] = [];
    for (const [key, value] of this.#map) parts.push(metaRecord(key, value));
    const data = Buffer.concat(parts);
    this.#handle.adopt(replaceFileOpen(this.#io, this.#file, data, this.#fsync));
    this.#size = data.length;
    this.#records = parts.length;
    this.#dirUnsynced = true;
    this.#rewriteDue = false;
    this.#intact = true;
  }

  #fsyncFile(done: (error: Error | null) => void): void {
    const jobs: FsyncJob[] = [];
    if (this.#handle.unsynced) jobs.push((cb) => this.#handle.fsync(cb));
    if (this.#dirUnsynced) jobs.push((cb) => fsyncDir(this.#io, path.dirname(this.#file), cb));
    this.#dirUnsynced = false;
    allDone(jobs, done);
  }
}
