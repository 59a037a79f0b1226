/**
 * The filesystem storage adapter: durable, crash-safe storage in a directory. Its files, their
 * framing and what recovery does are described in FORMAT.md, the format's one description;
 * `<dir>/FORMAT` records the format version (see format.ts).
 *
 * Names are encoded so they never leave `dir` (see names.ts). One adapter at a time uses a
 * directory: its first use (the broker opening it) creates the directory and takes the `LOCK`
 * file, and closing releases it (see lock.ts).
 */
import path from 'node:path';
import { ClosedError, type DataLossError, StorageError } from '../../errors.js';
import type { Log, Namespace, SegmentInfo, StorageAdapter, StorageFeatures } from '../types.js';
import { makeDataDirectory } from './data-dir.js';
import { checkFsyncPolicy, type FsyncPolicy } from './durability.js';
import { checkFormat } from './format.js';
import { checkMaxOpenFiles, DEFAULT_MAX_OPEN_FILES, Handles } from './handles.js';
import { type FsIo, nodeIo } from './io.js';
import { withStorageErrors } from './io-errors.js';
import { lockDirectory, lockHolder } from './lock.js';
import { FsLog } from './log.js';
import { encodeName } from './names.js';
import {
  checkName,
  checkSegmentBytes,
  FsNamespace,
  type FsSettings,
  listNamedDirs,
  writeLogLists,
} from './namespace.js';
import { overlayIo } from './overlay-io.js';
import { finishRemovals, setAside } from './removal.js';

export type { FsyncPolicy } from './durability.js';
export { isDataDirectory } from './format.js';
export type { FsIo } from './io.js';
export { nodeIo } from './io.js';
export { lockHolder } from './lock.js';

/** Options of {@link fsStorage}. */
export interface FsStorageOptions {
  /** The data directory (created, if missing, when the adapter is first used). */
  readonly dir: string;
  /** Segment size, by the records' `byteLength`, for logs opened without one (default 8 MiB). */
  readonly segmentBytes?: number;
  /**
   * When `sync()` (and so a publish) resolves. Default `'always'`: after an fsync covering the
   * write; concurrent writers share fsyncs, so throughput comes from batching, not from waiting
   * less. `{ intervalMs: 100 }` caps fsyncs at one per interval per log (group commit) for the
   * highest throughput; `'never'` only hands writes to the OS (safe against a process crash, not
   * against a power loss).
   */
  readonly fsync?: FsyncPolicy;
  /** The file operations used (for fault-injection tests); the real file system by default. */
  readonly io?: FsIo;
  /**
   * File descriptors kept open at most (default 128), whatever the number of queues: files open
   * on demand and the least recently used close past it. Descriptors under an fsync in flight
   * stay open beyond it until it ends.
   */
  readonly maxOpenFiles?: number;
}

const DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024;

/**
 * Creates a filesystem storage adapter. Creating it touches nothing: its first use (the broker
 * opening it) creates the directory and takes its lock, held until `close()`. The errors below
 * then reject that use (`Broker.open`).
 *
 * ```ts
 * const broker = await Broker.open({ storage: fsStorage({ dir: './data' }) });
 * ```
 *
 * @throws TypeError when `dir` is missing or empty.
 * @throws StorageError (541), on first use, when the directory cannot be created (a parent is a
 *   file, the file system refuses it).
 * @throws ResourceLockedError (405), on first use, when another adapter of this process (through
 *   any path to the same directory), or another live process, has the directory open. A lock
 *   left by a process that died is taken over.
 * @throws FormatVersionError (540), on first use, when the directory is in a format version
 *   this code does not read.
 * @throws CorruptionError (`MQLITE_CORRUPTION`), on first use, when the directory holds data
 *   without a format marker or its marker is garbled (see FORMAT.md).
 */
export function fsStorage(options: FsStorageOptions): StorageAdapter {
  if (typeof options !== 'object' || options === null || typeof options.dir !== 'string') {
    throw new TypeError('fsStorage needs { dir: string }');
  }
  if (options.dir === '') {
    throw new TypeError("fsStorage's dir is empty: name the data directory ('.' for this one)");
  }
  const io = withStorageErrors(options.io ?? nodeIo);
  const policy = checkFsyncPolicy(options.fsync ?? 'always');
  const maxOpenFiles = checkMaxOpenFiles(options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES);
  const settings = {
    io,
    handles: new Handles(io, maxOpenFiles, policy !== 'never'),
    policy,
    segmentBytes: checkSegmentBytes(options.segmentBytes ?? DEFAULT_SEGMENT_BYTES),
  };
  return new FsAdapter(path.resolve(options.dir), settings, true);
}

/** A data directory read as a reopen would, changing nothing: see {@link openFsSnapshot}. */
export interface FsSnapshot {
  /** The directory's storage, as a reopen finds it; what it writes stays in memory. */
  readonly storage: StorageAdapter;
  /** The format version the directory is in (older ones read as the current one). */
  readonly formatVersion: number;
  /** The pid of the live process holding the directory's lock when it was opened, if any. */
  readonly holder: number | undefined;
}

/**
 * Opens the data directory `dir` without taking its lock and without changing a byte of it: the
 * adapter's own recovery runs (torn tails cut, indexes rebuilt, `~meta` read around damage) over
 * a copy in memory of what it would write, so its logs and metadata read as a reopen would find
 * them. A process may hold the directory meanwhile (see `holder`): its latest writes may then be
 * missing or read as a torn tail.
 *
 * @throws StorageError when `dir` is not an existing directory.
 * @throws FormatVersionError, CorruptionError as {@link fsStorage} does.
 */
export function openFsSnapshot(dir: string): FsSnapshot {
  const at = path.resolve(dir);
  if (!nodeIo.isDirectorySync(at)) {
    throw new StorageError(`'${dir}' is not a data directory (no such directory)`, { file: at });
  }
  const holder = lockHolder(at);
  const io = withStorageErrors(overlayIo());
  const settings = {
    io,
    handles: new Handles(io, DEFAULT_MAX_OPEN_FILES, false),
    policy: 'never' as const,
    segmentBytes: DEFAULT_SEGMENT_BYTES,
  };
  const storage = new FsAdapter(at, settings, false);
  storage.openSync();
  return { storage, formatVersion: storage.formatVersion, holder };
}

/** A segment of an fs log with its file. */
export interface FsSegmentFile extends SegmentInfo {
  /** Path of the segment file. */
  readonly file: string;
  /** Bytes of the file (after a recovery cut). */
  readonly fileSize: number;
}

/** The segments of a log of an fs adapter with their files, oldest first. */
export function segmentFiles(log: Log<unknown>): FsSegmentFile[] {
  if (!(log instanceof FsLog)) throw new TypeError('not a log of an fs storage adapter');
  return log.segments() as FsSegmentFile[];
}

class FsAdapter implements StorageAdapter {
  readonly supports: StorageFeatures = {
    persistent: true,
    fsync: true,
    compaction: true,
    // Records are encoded, which keeps nothing of them either.
    packing: false,
  };
  readonly #dir: string;
  readonly #settings: FsSettings;
  readonly #namespaces = new Map<string, FsNamespace>();
  readonly #lock: boolean;
  #unlock: (() => void) | undefined;
  #formatVersion = 0;
  #closed = false;
  /** Losses found before anyone listened, handed to the first listener. */
  readonly #unheard: DataLossError[] = [];
  #listener: ((loss: DataLossError) => void) | undefined;

  /** With `lock` false (a snapshot), the directory must exist and its lock is not taken. */
  constructor(dir: string, settings: Omit<FsSettings, 'report'>, lock: boolean) {
    this.#dir = dir;
    this.#lock = lock;
    this.#settings = {
      ...settings,
      report: (loss) => {
        if (this.#listener) this.#listener(loss);
        else this.#unheard.push(loss);
      },
    };
  }

  /** The format version found on open. */
  get formatVersion(): number {
    return this.#formatVersion;
  }

  async open(): Promise<void> {
    this.openSync();
  }

  /**
   * Creates the directory, takes its lock and checks its format, once: on first use, so that
   * an adapter made and never used (or handed to a broker that fails first) holds nothing.
   */
  openSync(): void {
    this.#check();
    if (this.#unlock) return;
    const { io, policy } = this.#settings;
    const unlock = this.#lock ? lockDirectory(makeDataDirectory(this.#dir)) : () => {};
    try {
      const fsync = policy !== 'never';
      this.#formatVersion = checkFormat(io, this.#dir, fsync, (from) => {
        if (from < 5) writeLogLists(io, this.#dir, fsync);
      });
      finishRemovals(io, this.#dir);
    } catch (error) {
      unlock();
      throw error;
    }
    this.#unlock = unlock;
  }

  onDataLoss(listener: (loss: DataLossError) => void): void {
    this.#listener = listener;
    for (const loss of this.#unheard.splice(0)) listener(loss);
  }

  async namespace(name: string): Promise<Namespace> {
    this.openSync();
    checkName(name, 'namespace');
    const open = this.#namespaces.get(name);
    if (open) return open;
    const ns: FsNamespace = new FsNamespace(
      path.join(this.#dir, encodeName(name)),
      name,
      this.#settings,
      () => {
        if (this.#namespaces.get(name) === ns) this.#namespaces.delete(name);
      },
    );
    this.#namespaces.set(name, ns);
    return ns;
  }

  async listNamespaces(): Promise<string[]> {
    this.openSync();
    return listNamedDirs(this.#settings.io, this.#dir);
  }

  async deleteNamespace(name: string): Promise<void> {
    this.openSync();
    checkName(name, 'namespace');
    this.#namespaces.get(name)?.destroy();
    const { io, policy } = this.#settings;
    const dir = path.join(this.#dir, encodeName(name));
    if (io.isDirectorySync(dir)) io.rmSync(setAside(io, dir, policy !== 'never'));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      const results = await Promise.allSettled(
        [...this.#namespaces.values()].map((ns) => ns.close()),
      );
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      this.#unlock?.();
    }
  }

  /** See {@link abandonFsStorage}. */
  abandon(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const ns of [...this.#namespaces.values()]) ns.destroy();
    this.#unlock?.();
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('storage is closed');
  }
}

/**
 * Testing hook: drops an fs adapter the way a process crash would, so a test can reopen the
 * directory as a restarted process. Nothing more is written (appends not yet handed to the OS
 * are lost, indexes are not saved), descriptors are closed and the directory lock is released;
 * later calls on the adapter throw MQLITE_CLOSED. Exported as `simulateCrash` by
 * `mqlite/testing`.
 */
export function abandonFsStorage(storage: StorageAdapter): void {
  if (!(storage instanceof FsAdapter)) throw new TypeError('not an fs storage adapter');
  storage.abandon();
}
