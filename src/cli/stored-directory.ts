/**
 * A data directory as `mqlite inspect` and `mqlite peek` read it: through a snapshot of the fs
 * adapter (its own recovery, kept in memory, so nothing on disk changes and no lock is taken),
 * with the broker's registry of queues and exchanges on top. A namespace the registry does not
 * name is still listed, declared by its own copy of its declaration when it has one (as the
 * broker adopts it on open) or as a bare namespace of logs.
 */
import path from 'node:path';
import type { Declaration } from '../broker/declare-options.js';
import { delayedLogName, storedDelayed } from '../broker/delayed-store.js';
import { BROKER_NAMESPACE, BrokerRegistry, loadOwnDeclaration } from '../broker/registry.js';
import type { DataLossError } from '../errors.js';
import type { ExchangesSnapshot } from '../exchanges/registry.js';
import { messageCodec } from '../message/codec.js';
import type { StoredMessage } from '../message/types.js';
import { type FsSnapshot, openFsSnapshot } from '../storage/fs/index.js';
import type { Log, Namespace, RecordCodec } from '../storage/types.js';

/** A log's records as stored bytes: for namespaces of no known queue. */
const bytesCodec: RecordCodec<Uint8Array> = {
  byteLength: (record) => record.length,
  encode: (record) => record,
  decode: (bytes) => Uint8Array.from(bytes),
};

/** A record of a log: a message, or its bytes when the log holds no messages. */
export type StoredRecord = StoredMessage | Uint8Array;

/** One namespace of the directory: a queue, or logs no queue claims. */
export interface StoredEntry {
  readonly name: string;
  /** Undefined for a namespace no declaration describes. */
  readonly declaration: Declaration | undefined;
  /** Why the declaration could not be read, if it could not. */
  readonly error: Error | undefined;
  /** Undefined for a declared queue whose namespace was never created (nothing stored). */
  readonly namespace: Namespace | undefined;
}

export interface StoredDirectory {
  readonly dir: string;
  readonly snapshot: FsSnapshot;
  /** What recovery would cut, skip or restore on a reopen. */
  readonly losses: readonly DataLossError[];
  /** Declared queues first (name order), then the other namespaces. */
  readonly entries: readonly StoredEntry[];
  readonly exchanges: ExchangesSnapshot;
  /**
   * The messages a durable delayed exchange holds as a reopen would find them (transient ones
   * go), and when the first falls due; undefined when it has no stored log.
   */
  delayed(exchange: string): Promise<{ messages: number; nextDue: number | null } | undefined>;
  /** Opens a log of an entry with the codec its records are in. */
  openLog(entry: StoredEntry, log: string): Promise<Log<StoredRecord>>;
  close(): Promise<void>;
}

/**
 * Reads the data directory `dir` (see the header).
 *
 * @throws StorageError when it is not a directory; FormatVersionError, CorruptionError as
 *   `fsStorage` does.
 */
export async function readStoredDirectory(dir: string): Promise<StoredDirectory> {
  const snapshot = openFsSnapshot(dir);
  const { storage } = snapshot;
  const losses: DataLossError[] = [];
  storage.onDataLoss?.((loss) => losses.push(loss));
  try {
    const names = new Set(await storage.listNamespaces());
    const own = names.has(BROKER_NAMESPACE) ? await storage.namespace(BROKER_NAMESPACE) : undefined;
    const registry = own ? new BrokerRegistry(own.meta) : undefined;
    names.delete(BROKER_NAMESPACE);
    const declared: StoredEntry[] = [];
    for (const stored of registry?.load() ?? []) {
      const present = names.delete(stored.name);
      declared.push({
        name: stored.name,
        declaration: stored.declaration,
        error: stored.error,
        namespace: present ? await storage.namespace(stored.name) : undefined,
      });
    }
    const others: StoredEntry[] = [];
    for (const name of names) {
      const namespace = await storage.namespace(name);
      let declaration: Declaration | undefined;
      let error: Error | undefined;
      try {
        declaration = loadOwnDeclaration(namespace.meta, name);
      } catch (failure) {
        error = failure as Error;
      }
      (declaration ? declared : others).push({ name, declaration, error, namespace });
    }
    declared.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return {
      dir: path.resolve(dir),
      snapshot,
      losses,
      entries: [...declared, ...others],
      exchanges: registry?.loadExchanges() ?? {},
      async delayed(exchange) {
        const name = delayedLogName(exchange);
        if (!own || !(await own.listLogs()).includes(name)) return undefined;
        let messages = 0;
        let nextDue = Number.POSITIVE_INFINITY;
        for (const { due, persistent } of storedDelayed(await own.openLog(name, messageCodec))) {
          if (!persistent) continue;
          messages++;
          nextDue = Math.min(nextDue, due);
        }
        return { messages, nextDue: messages > 0 ? nextDue : null };
      },
      openLog: (entry, log) => {
        if (!entry.namespace) throw new Error(`queue '${entry.name}' has no stored logs`);
        const codec = entry.declaration ? messageCodec : bytesCodec;
        return entry.namespace.openLog<StoredRecord>(log, codec as RecordCodec<StoredRecord>);
      },
      close: () => storage.close(),
    };
  } catch (error) {
    await storage.close();
    throw error;
  }
}

/** The logs of an entry in the order its messages are delivered (higher priority first). */
export async function logsOf(entry: StoredEntry): Promise<string[]> {
  if (!entry.namespace) return [];
  const logs = await entry.namespace.listLogs();
  return entry.declaration?.kind === 'priority' ? logs.reverse() : logs;
}

/** The message of a record, or undefined when the record is bytes of no message. */
export function messageOf(record: StoredRecord): StoredMessage | undefined {
  return record instanceof Uint8Array ? undefined : record;
}
