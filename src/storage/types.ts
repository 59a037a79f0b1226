/**
 * The storage seam. Every queue kind persists through these interfaces and nothing else;
 * adapters know nothing of queues, messages or AMQP.
 *
 * Shape: an adapter holds namespaces (one per queue). A namespace holds any number of
 * append-only segmented logs (a stream has one, a priority queue one per level) and one
 * small key-value space for metadata (queue arguments, consumer offsets, key maps).
 *
 * Writes are synchronous into the adapter's buffers and made durable in batches: `append`
 * returns the record's offset at once and `sync()` resolves once everything appended before
 * the call is as durable as the adapter's fsync policy promises. Many appends in one tick
 * share one write and one promise, which is what makes a per-message publish cheap.
 */
import type { DataLossError } from '../errors.js';

/** Turns the records of one log into bytes and back. Only persistent adapters encode. */
export interface RecordCodec<T> {
  /**
   * Bytes the record accounts for in `bytes` totals and byte-based retention. Adapters call it
   * once per append; it must be cheap and must not depend on anything but the record.
   */
  byteLength(record: T): number;
  /** Serializes the record. The returned bytes may be reused by the codec after the call. */
  encode(record: T): Uint8Array;
  /**
   * Optional fast path of `encode`: writes the same bytes `encode` would return into `target`
   * from `offset`, and returns how many, or -1 when the record does not fit before the end of
   * `target` (the adapter then uses `encode`). It saves a copy per record when an adapter encodes
   * straight into its write buffer. Bytes of `target` after `offset` may be changed even when it
   * returns -1 or throws; it must not keep a reference to `target`.
   */
  encodeInto?(record: T, target: Uint8Array, offset: number): number;
  /**
   * Rebuilds a record from bytes produced by `encode`. The adapter may reuse `bytes` after the
   * call: a record must copy what it keeps.
   */
  decode(bytes: Uint8Array): T;
  /**
   * Optional fast path of `decode`: rebuilds the record from `bytes[offset, offset + length)`,
   * which saves a view per record when an adapter reads many records out of one buffer. Must
   * give the same result as `decode(bytes.subarray(offset, offset + length))`, and must not keep
   * a reference to `bytes` (the adapter reuses it).
   */
  decodeFrom?(bytes: Uint8Array, offset: number, length: number): T;
  /**
   * Optional: `decodeFrom` for bytes the adapter promises never to change or reuse, so the record
   * may keep views of them instead of copies (a payload read with no copy). A view keeps the
   * adapter's whole read buffer alive while the record lives. Adapters call it where they can
   * keep that promise (a cursor reading from its own buffers) and `decodeFrom` elsewhere.
   */
  decodeView?(bytes: Uint8Array, offset: number, length: number): T;
  /**
   * Optional: lets an adapter that keeps records in memory keep them packed instead of as the
   * objects appended (see {@link StorageFeatures.packing}).
   */
  readonly packing?: RecordPacking<T>;
}

/**
 * How a record splits for packed storage: payload bytes, which the adapter copies into large
 * shared buffers, and an envelope (the rest), which consecutive records usually share and which
 * is kept once per run. A log of millions of records then holds a few buffers and number arrays
 * instead of millions of objects the garbage collector has to trace and move.
 */
export interface RecordPacking<T> {
  /** The record's payload; the adapter copies it within `append`. */
  payload(record: T): Uint8Array;
  /** The record without its payload: kept for a run of records that {@link matches} it. */
  envelope(record: T): T;
  /** Whether `record` has the envelope `envelope`. Called once per append: keep it cheap. */
  matches(record: T, envelope: T): boolean;
  /**
   * Rebuilds a record from its envelope and its payload, `buffer[byteOffset, byteOffset +
   * byteLength)`. The record may keep a view of those bytes: the adapter never rewrites them.
   */
  unpack(envelope: T, buffer: ArrayBuffer, byteOffset: number, byteLength: number): T;
}

/** What an adapter can do, so shared code and the conformance suite can adapt. */
export interface StorageFeatures {
  /** Data outlives the adapter instance (a new adapter on the same location sees it). */
  readonly persistent: boolean;
  /** `sync()` waits for an fsync under the adapter's policy. */
  readonly fsync: boolean;
  /** Fully deleted segments and mostly deleted ones are reclaimed (`compact`). */
  readonly compaction: boolean;
  /**
   * Logs whose codec has `packing` keep their records packed: `append` copies the payload and
   * keeps nothing of the record object, and every read builds a new record. Like a persistent
   * adapter, which encodes within `append`, it lets the caller reuse the record's bytes at once.
   * Payloads share buffers, so a deleted record's bytes go with its segment: packing suits logs
   * that drop from the head, not ones that delete records one by one.
   */
  readonly packing: boolean;
}

/** Summary of one segment, kept in memory by every adapter so seeks never scan records. */
export interface SegmentInfo {
  /** Monotonic segment number within its log. */
  readonly id: number;
  /** Offset of the first record the segment ever held. */
  readonly firstOffset: number;
  /** Offset of the last record; `firstOffset - 1` while the segment is empty. */
  readonly lastOffset: number;
  /** Records stored in the segment, deleted ones included. */
  readonly count: number;
  /** Records in the segment marked deleted. */
  readonly deletedCount: number;
  /** Sum of `codec.byteLength` over the segment's records, deleted ones included. */
  readonly bytes: number;
  /** Timestamp of the first record (ms since epoch); `NaN` while empty. */
  readonly firstTimestamp: number;
  /** Timestamp of the last record (ms since epoch); `NaN` while empty. */
  readonly lastTimestamp: number;
}

/**
 * A forward reader over a log. It allocates nothing per record: `next()` advances and the
 * current record is read from the fields. It sees records appended after it was created.
 */
export interface LogCursor<T> {
  /** Offset of the current record (valid after `next()` returned true). */
  readonly offset: number;
  /** Timestamp of the current record. */
  readonly timestamp: number;
  /**
   * The current record, read when first asked for (a packed one is built then): a record
   * deleted since `next()` may read as undefined.
   */
  readonly record: T;
  /**
   * Moves to the next retained record that is not marked deleted. Returns false at the end
   * of the log (a later call may return true once more is appended). If the head of the log was
   * dropped past the cursor, it continues from the oldest retained record.
   */
  next(): boolean;
  /** Repositions so that the next `next()` yields the first live record at or after `offset`. */
  seek(offset: number): void;
}

/** Options for one log, fixed when it is first created and remembered by persistent adapters. */
export interface LogOptions {
  /**
   * Segment size in bytes before a new segment is started (default 8 MiB), counted in
   * `codec.byteLength` like `SegmentInfo.bytes`: an append starts a new segment when the active
   * one holds records and this record would take its bytes past the limit.
   */
  readonly segmentBytes?: number;
  /**
   * Whether a deletion may reach the disk before the records appended ahead of it, once its own
   * record is durable (default false: it waits for them all). Leave it off where a later record
   * replaces an earlier one (a last-value queue's newer value must be durable before the old
   * one's deletion); turn it on where none does, and a deletion no longer waits for the next
   * fsync round of records it does not depend on.
   */
  readonly independentDeletions?: boolean;
}

/** An append-only, segmented log of records with gapless offsets starting at 1. */
export interface Log<T> {
  readonly name: string;
  /** Offset of the oldest retained record; equals `nextOffset` when the log is empty. */
  readonly firstOffset: number;
  /** Offset the next appended record will get. Offsets are never reused. */
  readonly nextOffset: number;
  /** Retained records that are not marked deleted. */
  readonly count: number;
  /** Bytes of retained records that are not marked deleted. */
  readonly bytes: number;
  /**
   * Appends one record and returns its offset. Durable after the next `sync()` resolves. A
   * persistent adapter encodes the record before returning and keeps no reference to it, and so
   * does an adapter that packs a record of a codec with `packing`: then the caller may reuse the
   * record's bytes at once (queues hand it the publisher's body uncopied). Otherwise the adapter
   * keeps the record object as appended, and the caller must not change it.
   */
  append(record: T, timestamp: number): number;
  /** Resolves once everything appended so far is durable per the adapter's policy. */
  sync(): Promise<void>;
  /** Reads one retained record by offset, or undefined if dropped, deleted or never written. */
  get(offset: number): T | undefined;
  /** Timestamp of a retained record, or NaN. */
  timestampOf(offset: number): number;
  /** A cursor whose first `next()` yields the first live record at or after `offset`. */
  cursor(offset?: number): LogCursor<T>;
  /** The retained segments, oldest first. The last one is the active (written) segment. */
  segments(): readonly SegmentInfo[];
  /** Offset of the first record at or after `timestamp` (binary search), or `nextOffset`. */
  offsetAt(timestamp: number): number;
  /**
   * Drops whole segments from the head: every segment whose last offset is below `offset`.
   * The active segment is never dropped. Returns how many live records went.
   */
  dropBefore(offset: number): number;
  /**
   * Marks one record deleted (an acked message). Idempotent; unknown offsets are ignored.
   * A segment whose records are all deleted is reclaimed (never the active one); adapters that
   * support `compaction` also rewrite mostly deleted segments in the background, keeping offsets.
   */
  markDeleted(offset: number): void;
  /** Whether a retained record is marked deleted. */
  isDeleted(offset: number): boolean;
  /** Rolls over to a fresh active segment (so that every earlier segment can be dropped). */
  roll(): void;
  /**
   * Optional (adapters that can lose records to damage): moves `nextOffset` forward to `offset`
   * (nothing if it is not ahead), in a fresh active segment, so that offsets a lost segment
   * held are never handed out again.
   */
  advanceTo?(offset: number): void;
  /** Drops every record (all segments; offsets keep counting). */
  truncate(): void;
  /** Flushes and releases the log. Further calls throw MQLITE_CLOSED. */
  close(): Promise<void>;
}

/** JSON-compatible values, as stored in the metadata space. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/**
 * A small key-value space. Reads are served from memory; `set`/`delete` apply at once and are
 * written in the background, durable after `sync()`.
 */
export interface MetaStore {
  get(key: string): JsonValue | undefined;
  set(key: string, value: JsonValue): void;
  delete(key: string): void;
  /** Entries whose key starts with `prefix` (all entries without one), in key order. */
  entries(prefix?: string): IterableIterator<[string, JsonValue]>;
  sync(): Promise<void>;
  /**
   * Optional (persistent stores): what opening the store found damaged or missing (records
   * skipped or cut, the file lost or restored from an older version), each reported through
   * `onDataLoss` too. When it is not empty, what the store holds may be older than what was
   * written: a record read may be one a lost record had replaced.
   */
  readonly damage?: readonly DataLossError[];
}

/** The storage of one queue. */
export interface Namespace {
  readonly name: string;
  readonly meta: MetaStore;
  /** Opens a log, creating it if needed. Opening an open log returns the same instance. */
  openLog<T>(name: string, codec: RecordCodec<T>, options?: LogOptions): Promise<Log<T>>;
  /** Names of the logs that exist in this namespace, opened or not. */
  listLogs(): Promise<string[]>;
  /** Deletes a log and its data. */
  deleteLog(name: string): Promise<void>;
  /** Resolves once every log and the metadata are durable per policy. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** A storage adapter. `memoryStorage()` is the default; `fsStorage({ dir })` is durable. */
export interface StorageAdapter {
  readonly supports: StorageFeatures;
  /**
   * Optional (persistent adapters): sets the one receiver of what recovery cut, skipped or
   * restored on open (a torn last write cut off, damaged bytes skipped, a file restored from its
   * previous version), each a `DataLossError` with file, position and counts. Losses found before
   * it is set are handed to it at once. The broker sets it to its `onError`.
   */
  onDataLoss?(listener: (loss: DataLossError) => void): void;
  /**
   * Optional: takes what the adapter holds while in use (an fs directory's lock), which making
   * it does not. `Broker.open` calls it first; the other methods open it as well. Rejects when
   * it cannot be had (a directory locked by another process).
   */
  open?(): Promise<void>;
  /** Opens a namespace (creating it if needed). Any string is a valid name. */
  namespace(name: string): Promise<Namespace>;
  /** Names of all namespaces that exist. */
  listNamespaces(): Promise<string[]>;
  /** Deletes a namespace with all its logs and metadata. */
  deleteNamespace(name: string): Promise<void>;
  /** Flushes and releases everything. Idempotent. */
  close(): Promise<void>;
}
