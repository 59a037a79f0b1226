/**
 * The memory storage adapter, the default. Records are kept as the objects the caller appended
 * (the codec is only asked for `byteLength`), or packed when the codec has `packing`, in
 * segments of arrays sized up front, so an append writes into place and a cursor step is an
 * array read. Nothing outlives the adapter.
 */
import { ClosedError } from '../errors.js';
import { checkName, Guard, RESOLVED } from './memory-handle.js';
import { LogData, MemoryLog } from './memory-log.js';
import { MemoryMeta, MetaData } from './memory-meta.js';
import type {
  Log,
  LogOptions,
  MetaStore,
  Namespace,
  RecordCodec,
  StorageAdapter,
  StorageFeatures,
} from './types.js';

/** Options of {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /** Segment size for logs opened without their own `segmentBytes` (default 8 MiB). */
  readonly segmentBytes?: number;
}

const DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024;

/**
 * Creates an in-memory storage adapter.
 *
 * ```ts
 * const broker = await Broker.open({ storage: memoryStorage() });
 * ```
 */
export function memoryStorage(options: MemoryStorageOptions = {}): StorageAdapter {
  const segmentBytes = checkSegmentBytes(options.segmentBytes ?? DEFAULT_SEGMENT_BYTES);
  return new MemoryAdapter(segmentBytes);
}

function checkSegmentBytes(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`segmentBytes must be a positive integer, got ${String(value)}`);
  }
  return value;
}

class NamespaceData {
  readonly meta = new MetaData();
  // biome-ignore lint/suspicious/noExplicitAny: logs of any record type share the namespace.
  readonly logs = new Map<string, LogData<any>>();
}

class MemoryNamespace implements Namespace {
  readonly name: string;
  readonly meta: MetaStore;
  readonly #data: NamespaceData;
  readonly #guard: Guard;
  readonly #segmentBytes: number;
  readonly #onClose: () => void;
  // biome-ignore lint/suspicious/noExplicitAny: open handles of any record type.
  readonly #open = new Map<string, MemoryLog<any>>();

  constructor(name: string, data: NamespaceData, segmentBytes: number, onClose: () => void) {
    this.name = name;
    this.#data = data;
    this.#segmentBytes = segmentBytes;
    this.#onClose = onClose;
    this.#guard = new Guard(`namespace '${name}'`);
    this.meta = new MemoryMeta(data.meta, this.#guard);
  }

  async openLog<T>(name: string, codec: RecordCodec<T>, options: LogOptions = {}): Promise<Log<T>> {
    this.#guard.check();
    checkName(name, 'log');
    const open = this.#open.get(name);
    if (open !== undefined) return open;
    let data = this.#data.logs.get(name);
    if (data === undefined) {
      data = new LogData<T>(checkSegmentBytes(options.segmentBytes ?? this.#segmentBytes), codec);
      this.#data.logs.set(name, data);
    }
    const log: MemoryLog<T> = new MemoryLog<T>(name, data, () => {
      if (this.#open.get(name) === log) this.#open.delete(name);
    });
    this.#open.set(name, log);
    return log;
  }

  async listLogs(): Promise<string[]> {
    this.#guard.check();
    return [...this.#data.logs.keys()].sort();
  }

  async deleteLog(name: string): Promise<void> {
    this.#guard.check();
    checkName(name, 'log');
    await this.#open.get(name)?.close();
    this.#data.logs.delete(name);
  }

  sync(): Promise<void> {
    return this.#guard.closed
      ? Promise.reject(new ClosedError(`${this.#guard.what} is closed`))
      : RESOLVED;
  }

  async close(): Promise<void> {
    if (this.#guard.closed) return;
    this.#guard.closed = true;
    for (const log of [...this.#open.values()]) await log.close();
    this.#onClose();
  }
}

class MemoryAdapter implements StorageAdapter {
  readonly supports: StorageFeatures = Object.freeze({
    persistent: false,
    fsync: false,
    // Deleted records are released the moment they are marked, which is what compaction buys.
    compaction: true,
    packing: true,
  });
  readonly #segmentBytes: number;
  readonly #data = new Map<string, NamespaceData>();
  readonly #open = new Map<string, MemoryNamespace>();
  readonly #guard = new Guard('storage');

  constructor(segmentBytes: number) {
    this.#segmentBytes = segmentBytes;
  }

  async namespace(name: string): Promise<Namespace> {
    this.#guard.check();
    checkName(name, 'namespace');
    const open = this.#open.get(name);
    if (open !== undefined) return open;
    let data = this.#data.get(name);
    if (data === undefined) {
      data = new NamespaceData();
      this.#data.set(name, data);
    }
    const ns: MemoryNamespace = new MemoryNamespace(name, data, this.#segmentBytes, () => {
      if (this.#open.get(name) === ns) this.#open.delete(name);
    });
    this.#open.set(name, ns);
    return ns;
  }

  async listNamespaces(): Promise<string[]> {
    this.#guard.check();
    return [...this.#data.keys()].sort();
  }

  async deleteNamespace(name: string): Promise<void> {
    this.#guard.check();
    checkName(name, 'namespace');
    await this.#open.get(name)?.close();
    this.#data.delete(name);
  }

  async close(): Promise<void> {
    if (this.#guard.closed) return;
    this.#guard.closed = true;
    for (const ns of [...this.#open.values()]) await ns.close();
    this.#data.clear();
  }
}
