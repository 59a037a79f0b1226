/**
 * A namespace of the fs adapter: one directory holding the metadata file (`~meta`) and one
 * subdirectory per log, named by `encodeName` (a priority queue's levels land in `prio.000/`,
 * `prio.001/`, ...). Directories whose name had to be hashed keep the original in `~name`.
 */
import path from 'node:path';
import { ClosedError, type DataLossError } from '../../errors.js';
import type { Log, LogOptions, Namespace, RecordCodec } from '../types.js';
import type { FsyncPolicy } from './durability.js';
import { type FsIo, readFile, replaceFile } from './io.js';
import { FsLog } from './log.js';
import { FsMetaStore } from './meta.js';
import { decodeName, encodeName, isHashedName } from './names.js';

/** The adapter settings a namespace works with. */
export interface FsSettings {
  readonly io: FsIo;
  readonly policy: FsyncPolicy;
  readonly segmentBytes: number;
  /** Receives what recovery cut or repaired. */
  readonly report: (loss: DataLossError) => void;
}

const NAME_FILE = '~name';

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

/** Creates `dir` for `name` (recording the name if the directory name is a hash). */
export function makeNamedDir(io: FsIo, dir: string, name: string): void {
  io.mkdirSync(dir);
  const nameFile = path.join(dir, NAME_FILE);
  if (isHashedName(path.basename(dir)) && !io.existsSync(nameFile)) {
    replaceFile(io, nameFile, Buffer.from(name, 'utf8'), false);
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

export class FsNamespace implements Namespace {
  readonly name: string;
  readonly meta: FsMetaStore;
  readonly #dir: string;
  readonly #settings: FsSettings;
  readonly #onClose: () => void;
  // biome-ignore lint/suspicious/noExplicitAny: open logs of any record type.
  readonly #logs = new Map<string, FsLog<any>>();
  #closed = false;

  constructor(dir: string, name: string, settings: FsSettings, onClose: () => void) {
    this.name = name;
    this.#dir = dir;
    this.#settings = settings;
    this.#onClose = onClose;
    makeNamedDir(settings.io, dir, name);
    this.meta = new FsMetaStore(
      settings.io,
      path.join(dir, '~meta'),
      settings.policy,
      `namespace '${name}'`,
      () => this.#closed,
      settings.report,
      // Logs without metadata: the file was lost, not never written.
      listNamedDirs(settings.io, dir).length > 0,
    );
  }

  async openLog<T>(name: string, codec: RecordCodec<T>, options?: LogOptions): Promise<Log<T>> {
    this.#check();
    checkName(name, 'log');
    const segmentBytes = checkSegmentBytes(options?.segmentBytes ?? this.#settings.segmentBytes);
    const open = this.#logs.get(name);
    if (open) return open as FsLog<T>;
    const dir = path.join(this.#dir, encodeName(name));
    makeNamedDir(this.#settings.io, dir, name);
    const log: FsLog<T> = new FsLog(dir, name, codec, segmentBytes, {
      io: this.#settings.io,
      policy: this.#settings.policy,
      report: this.#settings.report,
      onClose: () => {
        if (this.#logs.get(name) === log) this.#logs.delete(name);
      },
    });
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
    this.#settings.io.rmSync(path.join(this.#dir, encodeName(name)));
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
