/**
 * The filesystem storage adapter: durable, crash-safe storage in a directory.
 *
 * ```
 * <dir>/<namespace>/~meta                    metadata (queue arguments, consumer offsets, ...)
 * <dir>/<namespace>/<log>/0000000001.seg     records: checksummed frames (see frame.ts)
 * <dir>/<namespace>/<log>/0000000001.idx     the segment's index, written on roll and close
 * <dir>/<namespace>/<log>/~deleted           deletion marks (acked offsets)
 * <dir>/<namespace>/<log>/~options           options the log was created with
 * ```
 *
 * Names are encoded so they never leave `dir` (see names.ts). A directory must be used by one
 * adapter at a time; this is not checked.
 */
import path from 'node:path';
import { ClosedError } from '../../errors.js';
import type { Namespace, StorageAdapter, StorageFeatures } from '../types.js';
import { checkFsyncPolicy, type FsyncPolicy } from './durability.js';
import { type FsIo, nodeIo } from './io.js';
import { encodeName } from './names.js';
import {
  checkName,
  checkSegmentBytes,
  FsNamespace,
  type FsSettings,
  listNamedDirs,
} from './namespace.js';

export type { FsyncPolicy } from './durability.js';
export type { FsIo } from './io.js';
export { nodeIo } from './io.js';

/** Options of {@link fsStorage}. */
export interface FsStorageOptions {
  /** The data directory (created if missing). */
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
}

const DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024;

/**
 * Creates a filesystem storage adapter.
 *
 * ```ts
 * const broker = await Broker.open({ storage: fsStorage({ dir: './data' }) });
 * ```
 */
export function fsStorage(options: FsStorageOptions): StorageAdapter {
  if (typeof options !== 'object' || options === null || typeof options.dir !== 'string') {
    throw new TypeError('fsStorage needs { dir: string }');
  }
  const settings: FsSettings = {
    io: options.io ?? nodeIo,
    policy: checkFsyncPolicy(options.fsync ?? 'always'),
    segmentBytes: checkSegmentBytes(options.segmentBytes ?? DEFAULT_SEGMENT_BYTES),
  };
  return new FsAdapter(path.resolve(options.dir), settings);
}

class FsAdapter implements StorageAdapter {
  readonly supports: StorageFeatures = { persistent: true, fsync: true, compaction: true };
  readonly #dir: string;
  readonly #settings: FsSettings;
  readonly #namespaces = new Map<string, FsNamespace>();
  #closed = false;

  constructor(dir: string, settings: FsSettings) {
    this.#dir = dir;
    this.#settings = settings;
    settings.io.mkdirSync(dir);
  }

  async namespace(name: string): Promise<Namespace> {
    this.#check();
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
    this.#check();
    return listNamedDirs(this.#settings.io, this.#dir);
  }

  async deleteNamespace(name: string): Promise<void> {
    this.#check();
    checkName(name, 'namespace');
    this.#namespaces.get(name)?.destroy();
    this.#settings.io.rmSync(path.join(this.#dir, encodeName(name)));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const results = await Promise.allSettled(
      [...this.#namespaces.values()].map((ns) => ns.close()),
    );
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('storage is closed');
  }
}
