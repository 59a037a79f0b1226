/**
 * A namespace of the fs adapter: one directory holding the metadata file (`~meta`), the list of
 * its logs (`~logs`, see log-list.ts) and one subdirectory per log, named by `encodeName` (a
 * priority queue's levels land in `prio.000/`, `prio.001/`, ...). Directories whose name had to
 * be hashed keep the original in `~name`.
 */
import path from 'node:path';
import { ClosedError, type DataLossError } from '../../errors.js';
import type { Log, LogOptions, Namespace, RecordCodec } from '../types.js';
import type { FsyncPolicy } from './durability.js';
import type { Handles } from './handles.js';
import { type FsIo, fsyncDirSync, readFile, replaceFile } from './io.js';
import { FsLog } from './log.js';
import { LOG_LIST_FILE, LogList, writeLogList } from './log-list.js';
import { FsMetaStore } from './meta.js';
import { decodeName, encodeName, isHashedName, NAME_FILE } from './names.js';
import { LIST_FILE } from './segment-list.js';

/** The adapter settings a namespace works with. */
export interface FsSettings {
  readonly io: FsIo;
  /** The adapter's descriptor cache. */
  readonly handles: Handles;
  readonly policy: FsyncPolicy;
  readonly segmentBytes: number;
  /** Receives what recovery cut or repaired. */
  readonly report: (loss: DataLossError) => void;
}

/** Checks a `segmentBytes` option. */
export function checkSegmentBytes(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`segmentBytes must be a positive integer, got ${String(value)}`);
  }
  return value;
}

export function checkName(name: unknown, what: string): string {
  if (typeof name !== 'string') throw new TypeError(`${what} name must be a string`);
  return name;
}

/**
 * Creates `dir` for `name` (recording the name if the directory name is a hash, fsynced when
 * `fsync`: the directory is found by it).
 */
export function makeNamedDir(io: FsIo, dir: string, name: string, fsync: boolean): void {
  io.mkdirSync(dir);
  const nameFile = path.join(dir, NAME_FILE);
  if (isHashedName(path.basename(dir)) && !io.existsSync(nameFile)) {
    replaceFile(io, nameFile, Buffer.from(name, 'utf8'), fsync);
  }
}

/** The names of the named directories in `dir`, sorted. */
export function listNamedDirs(io: FsIo, dir: string): string[] {
  const names: string[] = [];
  for (const entry of io.readdirSync(dir)) {
    // Files beside the namespaces (the lock, the format marker, a user's own) are not queues.
    if (entry.startsWith('~') || !io.isDirectorySync(path.join(dir, entry))) continue;
    const name = isHashedName(entry)
      ? readFile(io, path.join(dir, entry, NAME_FILE))?.toString('utf8')
      : decodeName(entry);
    if (name !== undefined && encodeName(name) === entry) names.push(name);
  }
  return names.sort();
}

/**
 * Writes the list of logs of every namespace of the data directory `dir`, from the log
 * directories present: the upgrade of a directory of format 4 or older, run before it is marked
 * current (so a crash before the marker repeats it).
 */
export function writeLogLists(io: FsIo, dir: string, fsync: boolean): void {
  for (const namespace of listNamedDirs(io, dir)) {
    const nsDir = path.join(dir, encodeName(namespace));
    const entries = listNamedDirs(io, nsDir).map((name) => ({
      name,
      segmentList: io.existsSync(path.join(nsDir, encodeName(name), LIST_FILE)),
    }));
    writeLogList(io, path.join(nsDir, LOG_LIST_FILE), nsDir, entries, fsync);
  }
}

export class FsNamespace implements Namespace {
  readonly name: string;
  readonly meta: FsMetaStore;
  readonly #dir: string;
  readonly #settings: FsSettings;
  readonly #onClose: () => void;
  readonly #list: LogList;
  // biome-ignore lint/suspicious/noExplicitAny: open logs of any record type.
  readonly #logs = new Map<string, FsLog<any>>();
  #closed = false;

  constructor(dir: string, name: string, settings: FsSettings, onClose: () => void) {
    this.name = name;
    this.#dir = dir;
    this.#settings = settings;
    this.#onClose = onClose;
    const { io } = settings;
    const fsync = settings.policy !== 'never';
    const logs = listNamedDirs(io, dir);
    // Its list of logs is written last when it is created: without it (and without logs), it is
    // new, or was being created when a crash came, and is created (again) step by step.
    const creating = logs.length === 0 && !io.existsSync(path.join(dir, LOG_LIST_FILE));
    makeNamedDir(io, dir, name, fsync);
    // The namespace's entry must be durable before anything in it counts on it.
    if (creating && fsync) fsyncDirSync(io, path.dirname(dir));
    this.meta = new FsMetaStore(
      settings.handles,
      path.join(dir, '~meta'),
      settings.policy,
      `namespace '${name}'`,
      () => this.#closed,
      settings.report,
      // Logs, or the list of logs written after the metadata: the file was lost, not never written.
      !creating,
    );
    try {
      // The metadata is durable before the list that says the namespace is complete.
      if (creating && fsync) fsyncDirSync(io, dir);
      this.#list = new LogList(io, dir, name, logs, fsync, settings.report);
    } catch (error) {
      this.meta.destroy();
      throw error;
    }
  }

  async openLog<T>(name: string, codec: RecordCodec<T>, options?: LogOptions): Promise<Log<T>> {
    this.#check();
    checkName(name, 'log');
    const segmentBytes = checkSegmentBytes(options?.segmentBytes ?? this.#settings.segmentBytes);
    const open = this.#logs.get(name);
    if (open) return open as FsLog<T>;
    const dir = path.join(this.#dir, encodeName(name));
    this.#list.check(name, dir);
    makeNamedDir(this.#settings.io, dir, name, this.#settings.policy !== 'never');
    const log: FsLog<T> = new FsLog(dir, name, codec, segmentBytes, {
      io: this.#settings.io,
      handles: this.#settings.handles,
      policy: this.#settings.policy,
      report: this.#settings.report,
      segmentListExpected: this.#list.hasSegmentList(name),
      independentDeletions: options?.independentDeletions === true,
      onClose: () => {
        if (this.#logs.get(name) === log) this.#logs.delete(name);
      },
    });
    this.#list.opened(name, dir);
    this.#logs.set(name, log);
    return log;
  }

  async listLogs(): Promise<string[]> {
    this.#check();
    return listNamedDirs(this.#settings.io, this.#dir);
  }

  async deleteLog(name: string): Promise<void> {
    this.#check();
    checkName(name, 'log');
    this.#logs.get(name)?.destroy();
    this.#list.remove(name, path.join(this.#dir, encodeName(name)));
  }

  async sync(): Promise<void> {
    this.#check();
    await Promise.all([...[...this.#logs.values()].map((log) => log.sync()), this.meta.sync()]);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      const results = await Promise.allSettled([
        ...[...this.#logs.values()].map((log) => log.close()),
        this.meta.close(),
      ]);
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      this.#onClose();
    }
  }

  /** Closes without writing: the namespace directory is about to be removed. */
  destroy(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const log of [...this.#logs.values()]) log.destroy();
    this.meta.destroy();
    this.#onClose();
  }

  #check(): void {
    if (this.#closed) throw new ClosedError(`namespace '${this.name}' is closed`);
  }
}
