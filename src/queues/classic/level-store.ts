/**
 * The ready store of the plain and the priority queue: one append-only log per priority level,
 * named `prio.000` … `prio.255` in the queue's namespace and opened on first use, so levels a queue
 * never sees cost nothing.
 *
 * Within a level the log *is* the queue: records are appended in arrival order, delivery walks a
 * cursor forward, acks mark records deleted. What is ready in a level is every live record at or
 * after the cursor's front plus the requeued offsets behind it (kept sorted, so a requeued message
 * goes back to its original position). Nothing is allocated per message beyond what the log
 * keeps; a handle is `level * 2^45 + offset`. On persistent storage a level is the storage's log
 * of encoded messages; in memory it is a `PackedLog`, which keeps a message in a few slots of
 * parallel arrays instead of three objects.
 */
import { bodyLength } from '../../message/packed-message.js';
import type { StoredMessage } from '../../message/types.js';
import type { Log, LogCursor, Namespace, RecordCodec } from '../../storage/types.js';
import { PackedLog, pageCodec } from './packed-log.js';
import { deleteRecord, NO_HANDLE, type ReadyStore } from './ready-store.js';

/** What a level needs of its log: a `Log<StoredMessage>` or a `PackedLog`. */
type LevelLog = Pick<
  Log<StoredMessage>,
  | 'firstOffset'
  | 'nextOffset'
  | 'count'
  | 'append'
  | 'sync'
  | 'get'
  | 'timestampOf'
  | 'cursor'
  | 'markDeleted'
  | 'isDeleted'
  | 'truncate'
  | 'close'
>;

/** Handles are `level * LEVEL_SPAN + offset`: 8 bits of level and 45 of offset fit in 2^53. */
const LEVEL_SPAN = 2 ** 45;

const LOG_NAME = /^prio\.(\d{3})$/;

/** Name of the log holding a priority level. */
export function levelLogName(level: number): string {
  return `prio.${String(level).padStart(3, '0')}`;
}

class Level {
  readonly log: LevelLog;
  readonly cursor: LogCursor<StoredMessage>;
  /** Offset the cursor loaded and has not been shifted yet (0: none loaded). */
  head = 0;
  headRecord: StoredMessage | undefined;
  /** Every live record at or after `front` is ready; the cursor stands at `front`. */
  front: number;
  /** Requeued offsets (all below `front`), ascending, from `requeuedHead` on. */
  requeued: number[] = [];
  requeuedHead = 0;
  readyCount = 0;
  /**
   * Records at or after `front` removed while their deletion waits (a dead letter's copy being
   * stored): still live in the log, so the cursor and readiness checks pass over them.
   */
  readonly removing = new Set<number>();
  /** Highest offset delivered since open, persisted so a reopen can flag redeliveries. */
  delivered: number;
  /** Offsets up to this one had been delivered before the store was opened. */
  readonly deliveredBeforeOpen: number;

  constructor(log: LevelLog, deliveredBeforeOpen: number) {
    this.log = log;
    this.front = log.firstOffset;
    this.cursor = log.cursor(this.front);
    this.deliveredBeforeOpen = deliveredBeforeOpen;
    this.delivered = deliveredBeforeOpen;
  }

  /** Offset of the next ready record of this level, or 0. */
  peek(): number {
    if (this.requeuedHead < this.requeued.length) return this.requeued[this.requeuedHead]!;
    if (this.head !== 0) return this.head;
    while (this.cursor.next()) {
      if (this.removing.has(this.cursor.offset)) continue;
      this.head = this.front = this.cursor.offset;
      this.headRecord = this.cursor.record;
      return this.head;
    }
    this.front = this.log.nextOffset;
    return 0;
  }

  /** Position of `offset` in the requeued list, or -1. */
  requeuedIndex(offset: number): number {
    const list = this.requeued;
    let lo = this.requeuedHead;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (list[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return list[lo] === offset ? lo : -1;
  }

  insertRequeued(offset: number): void {
    const list = this.requeued;
    if (this.requeuedHead > 0 && this.requeuedHead * 2 >= list.length) {
      list.splice(0, this.requeuedHead);
      this.requeuedHead = 0;
    }
    let i = list.length;
    // Messages usually come back in delivery order: scanning from the end is O(1) then.
    while (i > this.requeuedHead && list[i - 1]! > offset) i--;
    list.splice(i, 0, offset);
  }

  isReady(offset: number): boolean {
    if (offset < this.front) return this.requeuedIndex(offset) >= 0;
    // Retained (a reclaimed segment has no timestamps) and not deleted; no record is decoded.
    const log = this.log;
    return (
      !Number.isNaN(log.timestampOf(offset)) && !log.isDeleted(offset) && !this.removing.has(offset)
    );
  }
}

/** Options of {@link LevelStore.open}. */
export interface LevelStoreOptions {
  /** Highest level (0 for a plain FIFO queue). A message's level is its priority capped here. */
  readonly maxLevel: number;
  /** Codec of the message logs on persistent storage. */
  readonly codec: RecordCodec<StoredMessage>;
  /** The storage is persistent: levels are logs of encoded messages, not packed in memory. */
  readonly persistent: boolean;
  /** Segment size of new level logs. */
  readonly segmentBytes?: number;
  /** The level of a message priority (default: the priority capped at `maxLevel`). */
  readonly levelOf?: (priority: number) => number;
}

/** A `ReadyStore` with one FIFO log per priority level; delivery takes the highest level first. */
export class LevelStore implements ReadyStore {
  readonly #ns: Namespace;
  readonly #options: LevelStoreOptions;
  readonly #levels: (Level | undefined)[];
  readonly #opening: (Promise<void> | undefined)[];
  /** Highest level that may hold ready messages (-1: none). */
  #top = -1;
  #readyCount = 0;
  #readyBytes = 0;
  #inFlightCount = 0;
  #inFlightBytes = 0;
  /** The message of the last `shift`, so the queue's `message()` right after needs no read. */
  #shiftedHandle = NO_HANDLE;
  #shiftedRecord: StoredMessage | undefined;
  /** Logs written since the last `sync()`: usually one (a publish syncs right after its add). */
  #dirtyOne: LevelLog | undefined;
  #dirtyMore: Set<LevelLog> | undefined;
  #marksScheduled = false;
  /** Per-message expirations of the messages recovered at open, until the queue takes them. */
  #recoveredExpirations = new Map<number, number>();
  #closed = false;

  private constructor(ns: Namespace, options: LevelStoreOptions) {
    this.#ns = ns;
    this.#options = options;
    this.#levels = new Array(options.maxLevel + 1).fill(undefined);
    this.#opening = new Array(options.maxLevel + 1).fill(undefined);
  }

  /**
   * Opens the store in `ns`, recovering every level log that exists: its live records become
   * ready in offset order. Records above `maxLevel` (a store reopened with fewer levels) are
   * refused by the queue's argument check before this is reached.
   */
  static async open(ns: Namespace, options: LevelStoreOptions): Promise<LevelStore> {
    const store = new LevelStore(ns, options);
    for (const name of await ns.listLogs()) {
      const match = LOG_NAME.exec(name);
      if (!match) continue;
      const level = Number(match[1]);
      if (level > options.maxLevel) continue;
      await store.#openLevel(level);
    }
    return store;
  }

  /** In memory a level keeps messages (packed); on persistent storage it keeps their encoding. */
  /** See `ReadyStore.deletionsAfter`. */
  deletionsAfter: Promise<unknown> | undefined;

  get retainsMessages(): boolean {
    return !this.#options.persistent;
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

  /** The level a message goes to: its priority capped at the highest level. */
  levelOf(message: StoredMessage): number {
    const p = message.properties.priority;
    if (p === undefined) return 0;
    const levelOf = this.#options.levelOf;
    return levelOf === undefined ? Math.min(p, this.#options.maxLevel) : levelOf(p);
  }

  /** Ready messages of one level. */
  readyCountOf(level: number): number {
    return this.#levels[level]?.readyCount ?? 0;
  }

  prepare(message: StoredMessage): Promise<void> | undefined {
    const level = this.levelOf(message);
    if (this.#levels[level] !== undefined) return undefined;
    return (this.#opening[level] ??= this.#openLevel(level));
  }

  add(message: StoredMessage, timestamp: number): number {
    const level = this.levelOf(message);
    const lvl = this.#levels[level];
    if (lvl === undefined) throw new Error(`level ${level} was not prepared`);
    const offset = lvl.log.append(message, timestamp);
    lvl.readyCount++;
    this.#readyCount++;
    // A published message: its body is at hand (`bodyLength` is for messages read back).
    this.#readyBytes += message.body.length;
    if (level > this.#top) this.#top = level;
    this.#markDirty(lvl.log);
    return level * LEVEL_SPAN + offset;
  }

  peek(): number {
    return this.peekLevel(this.#topLevel());
  }

  /** `peek` within one level (`NO_HANDLE` when it has nothing ready). */
  peekLevel(level: number): number {
    if (this.readyCountOf(level) === 0) return NO_HANDLE;
    return level * LEVEL_SPAN + this.#levels[level]!.peek();
  }

  shift(): number {
    return this.shiftLevel(this.#topLevel());
  }

  /** `shift` within one level (`NO_HANDLE` when it has nothing ready). */
  shiftLevel(level: number): number {
    if (this.readyCountOf(level) === 0) return NO_HANDLE;
    const lvl = this.#levels[level]!;
    let offset: number;
    let record: StoredMessage;
    if (lvl.requeuedHead < lvl.requeued.length) {
      offset = lvl.requeued[lvl.requeuedHead++]!;
      record = lvl.log.get(offset)!;
    } else {
      offset = lvl.peek();
      record = lvl.headRecord!;
      lvl.head = 0;
      lvl.headRecord = undefined;
      lvl.front = offset + 1;
    }
    lvl.readyCount--;
    const bytes = bodyLength(record);
    this.#readyCount--;
    this.#readyBytes -= bytes;
    this.#inFlightCount++;
    this.#inFlightBytes += bytes;
    if (offset > lvl.delivered) {
      lvl.delivered = offset;
      this.#scheduleMarks();
    }
    const handle = level * LEVEL_SPAN + offset;
    this.#shiftedHandle = handle;
    this.#shiftedRecord = record;
    return handle;
  }

  requeue(handle: number): boolean {
    const level = Math.floor(handle / LEVEL_SPAN);
    const offset = handle - level * LEVEL_SPAN;
    const lvl = this.#levels[level]!;
    // Checked before anything changes: a bug elsewhere must not count a message twice.
    if (lvl.isReady(offset)) throw new RangeError(`message ${handle} is ready, not in flight`);
    const bytes = bodyLength(lvl.log.get(offset)!);
    lvl.insertRequeued(offset);
    lvl.readyCount++;
    this.#readyCount++;
    this.#readyBytes += bytes;
    this.#inFlightCount--;
    this.#inFlightBytes -= bytes;
    if (level > this.#top) this.#top = level;
    return true;
  }

  settle(handle: number): void {
    const level = Math.floor(handle / LEVEL_SPAN);
    const offset = handle - level * LEVEL_SPAN;
    const log = this.#levels[level]!.log;
    const record =
      handle === this.#shiftedHandle ? this.#shiftedRecord! : (log.get(offset) as StoredMessage);
    this.#inFlightCount--;
    this.#inFlightBytes -= bodyLength(record);
    deleteRecord(log, offset, this.deletionsAfter);
  }

  remove(handle: number): void {
    const level = Math.floor(handle / LEVEL_SPAN);
    const offset = handle - level * LEVEL_SPAN;
    const lvl = this.#levels[level];
    // Checked before anything changes: removing twice would make the counts negative.
    if (lvl?.isReady(offset) !== true) throw new RangeError(`message ${handle} is not ready`);
    let record: StoredMessage;
    if (offset === lvl.head) {
      record = lvl.headRecord!;
      lvl.head = 0;
      lvl.headRecord = undefined;
      lvl.front = offset + 1;
    } else {
      record = lvl.log.get(offset)!;
      if (offset < lvl.front) lvl.requeued.splice(lvl.requeuedIndex(offset), 1);
    }
    lvl.readyCount--;
    this.#readyCount--;
    this.#readyBytes -= bodyLength(record);
    const after = this.deletionsAfter;
    deleteRecord(lvl.log, offset, after);
    if (after !== undefined && offset >= lvl.front) {
      // Runs after the mark deleteRecord waits to make: the record is then deleted in the log.
      lvl.removing.add(offset);
      const done = () => lvl.removing.delete(offset);
      after.then(done, done);
    }
  }

  purge(): number {
    const purged = this.#readyCount;
    if (purged === 0) return 0;
    for (const lvl of this.#levels) {
      if (lvl === undefined || lvl.readyCount === 0) continue;
      if (this.#inFlightCount === 0) {
        lvl.log.truncate();
      } else {
        for (const offset of [...this.#levelReady(lvl)]) lvl.log.markDeleted(offset);
      }
      lvl.requeued = [];
      lvl.requeuedHead = 0;
      lvl.head = 0;
      lvl.headRecord = undefined;
      lvl.front = lvl.log.nextOffset;
      lvl.cursor.seek(lvl.front);
      lvl.readyCount = 0;
      this.#markDirty(lvl.log);
    }
    this.#readyCount = 0;
    this.#readyBytes = 0;
    this.#top = -1;
    return purged;
  }

  rank(handle: number): number {
    // Higher levels go first; within a level, offsets are arrival order.
    const level = Math.floor(handle / LEVEL_SPAN);
    return (this.#options.maxLevel - level) * LEVEL_SPAN + (handle - level * LEVEL_SPAN);
  }

  isReady(handle: number): boolean {
    const level = Math.floor(handle / LEVEL_SPAN);
    const lvl = this.#levels[level];
    return lvl?.isReady(handle - level * LEVEL_SPAN) === true;
  }

  message(handle: number): StoredMessage {
    if (handle === this.#shiftedHandle) return this.#shiftedRecord!;
    const level = Math.floor(handle / LEVEL_SPAN);
    const offset = handle - level * LEVEL_SPAN;
    const lvl = this.#levels[level]!;
    if (offset === lvl.head) return lvl.headRecord!;
    const record = lvl.log.get(offset);
    if (record === undefined) throw new RangeError(`no stored message with handle ${handle}`);
    return record;
  }

  timestamp(handle: number): number {
    const level = Math.floor(handle / LEVEL_SPAN);
    return this.#levels[level]!.log.timestampOf(handle - level * LEVEL_SPAN);
  }

  deliveredBeforeOpen(handle: number): boolean {
    const level = Math.floor(handle / LEVEL_SPAN);
    return handle - level * LEVEL_SPAN <= this.#levels[level]!.deliveredBeforeOpen;
  }

  takeRecoveredExpirations(): Map<number, number> {
    const taken = this.#recoveredExpirations;
    this.#recoveredExpirations = new Map();
    return taken;
  }

  *ready(): IterableIterator<number> {
    for (let level = this.#levels.length - 1; level >= 0; level--) {
      const lvl = this.#levels[level];
      if (lvl === undefined || lvl.readyCount === 0) continue;
      for (const offset of this.#levelReady(lvl)) yield level * LEVEL_SPAN + offset;
    }
  }

  sync(): Promise<void> {
    const one = this.#dirtyOne;
    if (one === undefined) return this.#ns.sync();
    this.#dirtyOne = undefined;
    const more = this.#dirtyMore;
    if (more === undefined || more.size === 0) return one.sync();
    const all = [one.sync(), ...[...more].map((log) => log.sync())];
    more.clear();
    return Promise.all(all).then(() => undefined);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.#opening.filter((p) => p !== undefined));
    this.#writeMarks();
    for (const lvl of this.#levels) if (lvl) await lvl.log.close();
  }

  *#levelReady(lvl: Level): Generator<number, void, undefined> {
    for (let i = lvl.requeuedHead; i < lvl.requeued.length; i++) yield lvl.requeued[i]!;
    const cursor = lvl.log.cursor(lvl.front);
    while (cursor.next()) if (!lvl.removing.has(cursor.offset)) yield cursor.offset;
  }

  #topLevel(): number {
    let top = this.#top;
    while (top >= 0 && (this.#levels[top]?.readyCount ?? 0) === 0) top--;
    this.#top = top;
    return top;
  }

  #markDirty(log: LevelLog): void {
    const one = this.#dirtyOne;
    if (one === undefined) this.#dirtyOne = log;
    else if (one !== log) (this.#dirtyMore ??= new Set()).add(log);
  }

  async #openLevel(level: number): Promise<void> {
    const name = levelLogName(level);
    const { codec, persistent, segmentBytes } = this.#options;
    const log: LevelLog = persistent
      ? await this.#ns.openLog(name, codec, segmentBytes === undefined ? {} : { segmentBytes })
      : new PackedLog(await this.#ns.openLog(name, pageCodec));
    const key = `${name}.delivered`;
    let mark = this.#ns.meta.get(key);
    // A mark past the log's end outlived the records it marked (their log was lost and begins
    // again): the log's new records were never delivered.
    if (typeof mark === 'number' && mark >= log.nextOffset) {
      mark = log.nextOffset - 1;
      this.#ns.meta.set(key, mark);
    }
    const lvl = new Level(log, typeof mark === 'number' ? mark : 0);
    // One pass over the live records: their bytes, and the expirations the queue will index.
    let bytes = 0;
    const cursor = log.cursor(log.firstOffset);
    while (cursor.next()) {
      const record = cursor.record;
      bytes += bodyLength(record);
      const expiration = record.properties.expiration;
      if (expiration !== undefined) {
        this.#recoveredExpirations.set(level * LEVEL_SPAN + cursor.offset, Number(expiration));
      }
    }
    lvl.readyCount = log.count;
    this.#readyCount += log.count;
    this.#readyBytes += bytes;
    if (log.count > 0 && level > this.#top) this.#top = level;
    this.#levels[level] = lvl;
    this.#opening[level] = undefined;
  }

  /** Delivery marks are written at most once per tick: one metadata write, not one per message. */
  #scheduleMarks(): void {
    if (this.#marksScheduled) return;
    this.#marksScheduled = true;
    queueMicrotask(() => this.#writeMarks());
  }

  #writeMarks(): void {
    if (!this.#marksScheduled) return;
    this.#marksScheduled = false;
    this.#levels.forEach((lvl, level) => {
      if (lvl && lvl.delivered > lvl.deliveredBeforeOpen) {
        const key = `${levelLogName(level)}.delivered`;
        if (this.#ns.meta.get(key) !== lvl.delivered) this.#ns.meta.set(key, lvl.delivered);
      }
    });
  }
}
