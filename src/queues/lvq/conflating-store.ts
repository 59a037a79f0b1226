/**
 * The ready store of the last-value queue: one log (`lvq`) in the queue's namespace, plus a key
 * map from each key to its latest message.
 *
 * - `add` appends at the tail. If the key's previous value is ready, it is removed (marked deleted
 *   in the log, which the fs adapter compacts away): replacing a key moves its value to the tail.
 *   If the previous value is in flight it stays with its consumer, flagged superseded: acked it is
 *   gone, released (`requeue`) it is discarded rather than redelivered.
 * - Messages without the key header are plain FIFO entries: never replaced, never replacing.
 * - Handles are log offsets, so delivery order, browse order and arrival order are one order, and
 *   a requeued message goes back to its original position. The ready FIFO is the table itself,
 *   read in handle order from a head: a publish appends to no list, and a value removed from the
 *   middle leaves nothing behind to skip but a free slot of the table.
 *
 * Live messages are kept in memory (in an `EntryTable`, which allocates nothing per message), so
 * memory grows with live keys and keyless messages, not with messages ever published; the log is
 * only written, except when the store opens and rebuilds the key map from the live records,
 * which compaction keeps few.
 */
import type { StoredMessage } from '../../message/types.js';
import type { Log, LogCursor, Namespace, RecordCodec } from '../../storage/types.js';
import { deleteRecord, NO_HANDLE, type ReadyStore } from '../classic/ready-store.js';
import { EntryTable } from './entry-table.js';
import { type LvqKey, lvqKey } from './key.js';

/** Name of the store's log in the queue's namespace. */
export const LVQ_LOG = 'lvq';
/** Metadata key of the highest offset ever delivered (redelivery flag after a reopen). */
const DELIVERED_MARK = 'lvq.delivered';
/**
 * Segment sizes of the log. Small segments let fully superseded ones be reclaimed early, so a
 * queue with a thousand hot keys keeps a few segments, not one large one full of dead slots;
 * and a rarely updated key pins only a small segment. On disk, where compaction rewrites mostly
 * deleted segments, larger ones save files; in memory a pinned segment costs 16 bytes per slot.
 */
const PERSISTENT_SEGMENT_BYTES = 256 * 1024;
const MEMORY_SEGMENT_BYTES = 32 * 1024;
/** What one record counts for in a memory log: 256 records per segment. */
const MEMORY_RECORD_BYTES = 128;

const READY = 1;
const IN_FLIGHT = 2;
/** Ready and waiting in the requeued list rather than in the FIFO. */
const REQUEUED = 4;
/** In flight, and a newer value of its key arrived: discard instead of requeueing. */
const SUPERSEDED = 8;

/** The handle of a key's latest message, updated in place when a newer one arrives. */
class Latest {
  constructor(public handle: number) {}
}

/** Options of {@link ConflatingStore.open}. */
export interface ConflatingStoreOptions {
  /** Name of the header holding a message's key. */
  readonly key: string;
  /** Codec of the message log. */
  readonly codec: RecordCodec<StoredMessage>;
  /** The storage is persistent: the log gets larger segments (see above). */
  readonly persistent: boolean;
}

/** A `ReadyStore` that keeps only the latest message of each key. */
export class ConflatingStore implements ReadyStore {
  /** Name of the header holding a message's key. */
  readonly keyHeader: string;
  /**
   * Called after every `add`: the queue wakes its browsers with it. It must not call back into
   * the store synchronously.
   */
  onAdd: (() => void) | undefined;
  /** See `ReadyStore.onDisplaced`. */
  onDisplaced: ((handle: number) => void) | undefined;
  /** The entry table keeps every stored message, for browsers and deliveries. */
  readonly retainsMessages = true;
  /** See `ReadyStore.deletionsAfter`. */
  deletionsAfter: Promise<unknown> | undefined;

  readonly #ns: Namespace;
  readonly #log: Log<StoredMessage>;
  /** Every stored message (ready or in flight) by handle. */
  readonly #table = new EntryTable();
  /** Key → handle of its latest message (ready or in flight). */
  readonly #latest = new Map<LvqKey, Latest>();
  /**
   * Every stored handle from here on is ready and waits in the FIFO; the handles before it were
   * taken (in flight or requeued) or are gone.
   */
  #head = 0;
  /** The handle added last: nothing is stored after it. */
  #last = -1;
  /** Requeued handles, ascending; all precede `#head`. */
  #requeued: number[] = [];
  #readyCount = 0;
  #readyBytes = 0;
  #inFlightCount = 0;
  #inFlightBytes = 0;
  /** Highest handle delivered, and what it was when the store opened. */
  #delivered: number;
  readonly #deliveredAtOpen: number;
  #markScheduled = false;
  #logDirty = false;
  #closed = false;

  private constructor(ns: Namespace, log: Log<StoredMessage>, keyHeader: string) {
    this.#ns = ns;
    this.#log = log;
    this.keyHeader = keyHeader;
    const mark = ns.meta.get(DELIVERED_MARK);
    this.#deliveredAtOpen = this.#delivered = typeof mark === 'number' ? mark : 0;
  }

  /**
   * Opens the store in `ns` and rebuilds the key map from the log's live records. If a crash left
   * two live values of one key (the newer appended, the older not yet marked deleted), the older
   * is dropped now: a superseded value is never delivered.
   */
  static async open(ns: Namespace, options: ConflatingStoreOptions): Promise<ConflatingStore> {
    const { persistent } = options;
    // In memory the log only keeps references, not packed records: a superseded value is then
    // released when it is deleted, not with its segment. Segments are sized by record count, and
    // deleting a record never reads the (long cold) message again.
    const { encode, decode } = options.codec;
    const codec = persistent ? options.codec : { byteLength: memoryRecordBytes, encode, decode };
    const log = await ns.openLog(LVQ_LOG, codec, {
      segmentBytes: persistent ? PERSISTENT_SEGMENT_BYTES : MEMORY_SEGMENT_BYTES,
    });
    const store = new ConflatingStore(ns, log, options.key);
    const cursor = log.cursor(log.firstOffset);
    while (cursor.next()) store.#insert(cursor.offset, cursor.record, cursor.timestamp);
    return store;
  }

  get readyCount(): number {
    return this.#readyCount;
  }

  get readyBytes(): number {
    return this.#readyBytes;
  }

  get inFlightCount(): number {
    return this.#inFlightCount;
  }

  get inFlightBytes(): number {
    return this.#inFlightBytes;
  }

  /** Live keys: keys whose latest value is ready or in flight. */
  get keyCount(): number {
    return this.#latest.size;
  }

  /** The key of a message under this store's key header, or undefined for a keyless one. */
  keyOf(message: StoredMessage): LvqKey | undefined {
    const headers = message.properties.headers;
    return headers === undefined ? undefined : lvqKey(headers[this.keyHeader]);
  }

  prepare(): undefined {
    return undefined;
  }

  add(message: StoredMessage, timestamp: number): number {
    const handle = this.#log.append(message, timestamp);
    this.#logDirty = true;
    this.#insert(handle, message, timestamp);
    this.onAdd?.();
    return handle;
  }

  peek(): number {
    return this.#next();
  }

  shift(): number {
    const handle = this.#next();
    if (handle === NO_HANDLE) return NO_HANDLE;
    const table = this.#table;
    if (table.flags(handle) & REQUEUED) this.#requeued.shift();
    else this.#head = handle + 1;
    table.setFlags(handle, IN_FLIGHT);
    const bytes = table.bytes(handle);
    this.#readyCount--;
    this.#readyBytes -= bytes;
    this.#inFlightCount++;
    this.#inFlightBytes += bytes;
    if (handle > this.#delivered) {
      this.#delivered = handle;
      this.#scheduleMark();
    }
    return handle;
  }

  requeue(handle: number): boolean {
    const flags = this.#flags(handle, IN_FLIGHT);
    const bytes = this.#table.bytes(handle);
    this.#inFlightCount--;
    this.#inFlightBytes -= bytes;
    if (flags & SUPERSEDED) {
      this.#delete(handle, flags);
      return false;
    }
    this.#table.setFlags(handle, READY | REQUEUED);
    const list = this.#requeued;
    let i = list.length;
    // Messages usually come back in delivery order: scanning from the end is O(1) then.
    while (i > 0 && list[i - 1]! > handle) i--;
    list.splice(i, 0, handle);
    this.#readyCount++;
    this.#readyBytes += bytes;
    return true;
  }

  settle(handle: number): void {
    const flags = this.#flags(handle, IN_FLIGHT);
    this.#inFlightCount--;
    this.#inFlightBytes -= this.#delete(handle, flags);
  }

  remove(handle: number): void {
    this.#removeReady(handle, this.#flags(handle, READY));
  }

  purge(): number {
    const purged = this.#readyCount;
    if (purged === 0) return 0;
    // With nothing in flight the whole log goes at once; otherwise record by record.
    const truncate = this.#inFlightCount === 0;
    for (const handle of [...this.ready()]) {
      if (truncate) this.#forget(handle, this.#table.flags(handle));
      else this.#delete(handle, this.#table.flags(handle));
    }
    if (truncate) this.#log.truncate();
    this.#requeued = [];
    this.#readyCount = 0;
    this.#readyBytes = 0;
    this.#logDirty = true;
    return purged;
  }

  /** Handles are offsets in the log, which is queue order (a requeue keeps its place). */
  rank(handle: number): number {
    return handle;
  }

  isReady(handle: number): boolean {
    return (this.#table.flags(handle) & READY) !== 0;
  }

  message(handle: number): StoredMessage {
    const message = this.#table.message(handle);
    if (message === undefined) throw unknownHandle(handle);
    return message;
  }

  timestamp(handle: number): number {
    this.#flags(handle, READY | IN_FLIGHT);
    return this.#table.timestamp(handle);
  }

  deliveredBeforeOpen(handle: number): boolean {
    return handle <= this.#deliveredAtOpen;
  }

  /** Messages are kept in memory here: their expirations are read when asked for. */
  *takeRecoveredExpirations(): IterableIterator<[number, number]> {
    for (const handle of [...this.ready()]) {
      const expiration = this.#table.message(handle)!.properties.expiration;
      if (expiration !== undefined) yield [handle, Number(expiration)];
    }
  }

  *ready(): IterableIterator<number> {
    yield* this.#requeued;
    const table = this.#table;
    for (let handle = table.next(this.#head); handle >= 0; handle = table.next(handle + 1)) {
      yield handle;
    }
  }

  /** The latest message of a key (ready or in flight), or undefined. */
  latest(key: LvqKey): StoredMessage | undefined {
    const latest = this.#latest.get(key);
    return latest === undefined ? undefined : this.#table.message(latest.handle);
  }

  /**
   * A cursor over the current values in queue order: every stored message that no newer value
   * of its key superseded, ready or in flight. It sees messages added after it was created and
   * never yields a value that was replaced before it got there.
   */
  current(): CurrentValues {
    return new CurrentValues(this.#log.cursor(this.#log.firstOffset), this.#table);
  }

  sync(): Promise<void> {
    if (!this.#logDirty) return this.#ns.sync();
    this.#logDirty = false;
    return this.#log.sync();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#writeMark();
    await this.#log.close();
  }

  /** Stores a live record as ready at the tail, replacing a ready older value of its key. */
  #insert(handle: number, message: StoredMessage, timestamp: number): void {
    const key = this.keyOf(message);
    this.#table.add(handle, message, key, timestamp, READY);
    this.#last = handle;
    this.#readyCount++;
    this.#readyBytes += message.body.length;
    if (key === undefined) return;
    // One hash lookup per publish: the key's slot is updated in place.
    const latest = this.#latest.get(key);
    if (latest === undefined) {
      this.#latest.set(key, new Latest(handle));
      return;
    }
    const older = latest.handle;
    latest.handle = handle;
    const flags = this.#table.flags(older);
    if (flags & READY) {
      this.#removeReady(older, flags | SUPERSEDED);
      this.onDisplaced?.(older);
    } else {
      this.#table.setFlags(older, flags | SUPERSEDED);
    }
  }

  /** The next ready handle in delivery order; the head moves past the free slots before it. */
  #next(): number {
    if (this.#requeued.length > 0) return this.#requeued[0]!;
    const handle = this.#table.next(this.#head);
    if (handle < 0) {
      this.#head = this.#last + 1;
      return NO_HANDLE;
    }
    this.#head = handle;
    return handle;
  }

  #removeReady(handle: number, flags: number): void {
    if (flags & REQUEUED) this.#requeued.splice(this.#requeued.indexOf(handle), 1);
    this.#readyCount--;
    this.#readyBytes -= this.#delete(handle, flags);
  }

  /** Forgets a stored message and marks its record deleted; returns its body bytes. */
  #delete(handle: number, flags: number): number {
    const bytes = this.#forget(handle, flags);
    deleteRecord(this.#log, handle, this.deletionsAfter);
    this.#logDirty = true;
    return bytes;
  }

  /**
   * Forgets a stored message and returns its body bytes; `flags` has SUPERSEDED when the key map
   * no longer points at it.
   */
  #forget(handle: number, flags: number): number {
    if (!(flags & SUPERSEDED)) {
      const key = this.#table.key(handle);
      if (key !== undefined) this.#latest.delete(key);
    }
    return this.#table.delete(handle);
  }

  /** The state bits of a stored handle; throws for a handle that is not stored. */
  /**
   * The flags of a stored handle in the `state` (READY or IN_FLIGHT) an operation needs: checked
   * before anything changes, so a bug elsewhere cannot count a message twice.
   */
  #flags(handle: number, state: number): number {
    const flags = this.#table.flags(handle);
    if (flags === 0) throw unknownHandle(handle);
    if ((flags & state) === 0) {
      throw new RangeError(`message ${handle} is not ${state === READY ? 'ready' : 'in flight'}`);
    }
    return flags;
  }

  /** The delivery mark is written at most once per tick: one metadata write, not one per message. */
  #scheduleMark(): void {
    if (this.#markScheduled) return;
    this.#markScheduled = true;
    queueMicrotask(() => this.#writeMark());
  }

  #writeMark(): void {
    if (!this.#markScheduled) return;
    this.#markScheduled = false;
    if (this.#ns.meta.get(DELIVERED_MARK) !== this.#delivered) {
      this.#ns.meta.set(DELIVERED_MARK, this.#delivered);
    }
  }
}

function memoryRecordBytes(): number {
  return MEMORY_RECORD_BYTES;
}

function unknownHandle(handle: number): RangeError {
  return new RangeError(`no stored message with handle ${handle}`);
}

/**
 * A cursor over the current values of a conflating store, in queue order. Like a log cursor it
 * allocates nothing per step: `next()` advances and the fields hold the current value.
 */
export class CurrentValues {
  /** Handle (log offset) of the current value. */
  handle = 0;
  /** The current value (valid after `next()` returned true). */
  message: StoredMessage = undefined as unknown as StoredMessage;
  readonly #cursor: LogCursor<StoredMessage>;
  readonly #table: EntryTable;

  /** @internal Made by `ConflatingStore.current()`. */
  constructor(cursor: LogCursor<StoredMessage>, table: EntryTable) {
    this.#cursor = cursor;
    this.#table = table;
  }

  /**
   * Moves to the next current value. Returns false when there is none yet; a later call yields
   * values added since.
   */
  next(): boolean {
    const cursor = this.#cursor;
    const table = this.#table;
    while (cursor.next()) {
      const handle = cursor.offset;
      const flags = table.flags(handle);
      if (flags === 0 || flags & SUPERSEDED) continue;
      this.handle = handle;
      this.message = table.message(handle)!;
      return true;
    }
    return false;
  }
}
