/**
 * The logs of the memory adapter: the data of one log (its segments, offsets, counts), which
 * outlives the handles opened on it until the log is deleted, the handles, and their cursors.
 */
import { ClosedError } from '../errors.js';
import { Guard, RESOLVED } from './memory-handle.js';
import { INITIAL_CAPACITY, newSegment, PayloadWriter, type Segment } from './memory-segments.js';
import type { Log, LogCursor, RecordCodec, SegmentInfo } from './types.js';

function checkNumber(value: unknown, what: string): number {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new TypeError(`${what} must be a number, got ${String(value)}`);
  }
  return value;
}

/** The data of one log; it outlives the handles opened on it until the log is deleted. */
export class LogData<T> {
  /** Retained segments, oldest first; never empty, the last one is `active`. */
  segments: Segment<T>[];
  active: Segment<T>;
  nextOffset = 1;
  nextSegmentId = 1;
  /** Live (not deleted) records and their bytes. */
  count = 0;
  bytes = 0;

  /** The codec the log was created with: it decides the segments' layout for good. */
  readonly codec: RecordCodec<T>;
  readonly #writer = new PayloadWriter();

  constructor(
    readonly segmentBytes: number,
    codec: RecordCodec<T>,
  ) {
    this.codec = codec;
    this.active = this.newSegment(INITIAL_CAPACITY);
    this.segments = [this.active];
  }

  get firstOffset(): number {
    return this.segments[0]!.firstOffset;
  }

  append(record: T, timestamp: number, length: number): number {
    let seg = this.active;
    if (seg.bytes + length > this.segmentBytes && seg.count > 0) seg = this.roll();
    const n = seg.count;
    if (n === seg.capacity) seg.grow();
    seg.store(n, record);
    seg.timestamps[n] = timestamp;
    seg.count = n + 1;
    seg.bytes += length;
    this.count++;
    this.bytes += length;
    return this.nextOffset++;
  }

  roll(): Segment<T> {
    const old = this.active;
    if (old.count === 0) return old;
    const seg = this.newSegment(old.count);
    this.segments.push(seg);
    this.active = seg;
    if (old.deletedCount === old.count) this.reclaim(old);
    else old.trim();
    return seg;
  }

  private newSegment(capacity: number): Segment<T> {
    return newSegment(
      this.codec,
      this.#writer,
      this.nextSegmentId++,
      this.nextOffset,
      Math.max(capacity, INITIAL_CAPACITY),
    );
  }

  /** Index of the segment holding `offset`, or -1. O(log segments). */
  indexOf(offset: number): number {
    const segs = this.segments;
    let lo = 0;
    let hi = segs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const seg = segs[mid]!;
      if (offset < seg.firstOffset) hi = mid - 1;
      else if (offset >= seg.firstOffset + seg.count) lo = mid + 1;
      else return mid;
    }
    return -1;
  }

  /** Index of the first segment whose last offset is at or after `offset` (segments.length if none). */
  indexFrom(offset: number): number {
    const segs = this.segments;
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const seg = segs[mid]!;
      if (seg.firstOffset + seg.count <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The segment holding `offset` (fast path: the active one), or undefined. */
  segmentOf(offset: number): Segment<T> | undefined {
    const active = this.active;
    if (offset >= active.firstOffset) return active;
    return this.segments[this.indexOf(offset)];
  }

  get(offset: number): T | undefined {
    if (!Number.isInteger(offset)) return undefined;
    const seg = this.segmentOf(offset);
    if (seg === undefined) return undefined;
    const i = offset - seg.firstOffset;
    if (i >= seg.count) return undefined;
    return seg.load(i);
  }

  timestampOf(offset: number): number {
    if (!Number.isInteger(offset)) return Number.NaN;
    const seg = this.segmentOf(offset);
    if (seg === undefined) return Number.NaN;
    const i = offset - seg.firstOffset;
    return i < seg.count ? seg.timestamps[i]! : Number.NaN;
  }

  /**
   * The first retained offset whose timestamp is at or after `timestamp`. Timestamps are assumed
   * non-decreasing, as arrival times are; after a clock stepped back the answer is a record at or
   * after `timestamp` but not necessarily the first one.
   */
  offsetAt(timestamp: number): number {
    const segs = this.segments;
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const seg = segs[mid]!;
      const n = seg.count;
      // Only the active (last) segment can be empty; it sorts as "before" every timestamp.
      if (n === 0 || seg.timestamps[n - 1]! < timestamp) lo = mid + 1;
      else hi = mid;
    }
    const seg = segs[lo];
    if (seg === undefined) return this.nextOffset;
    const ts = seg.timestamps;
    let a = 0;
    let b = seg.count - 1; // ts[b] >= timestamp holds by the search above
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (ts[mid]! < timestamp) a = mid + 1;
      else b = mid;
    }
    return seg.firstOffset + a;
  }

  dropBefore(offset: number): number {
    const segs = this.segments;
    let k = 0;
    let live = 0;
    let liveBytes = 0;
    while (k < segs.length - 1) {
      const seg = segs[k]!;
      if (seg.firstOffset + seg.count - 1 >= offset) break;
      live += seg.count - seg.deletedCount;
      liveBytes += seg.bytes - seg.deletedBytes;
      seg.dropped = true;
      k++;
    }
    if (k > 0) {
      segs.splice(0, k);
      this.count -= live;
      this.bytes -= liveBytes;
    }
    return live;
  }

  markDeleted(offset: number): void {
    if (!Number.isInteger(offset)) return;
    const seg = this.segmentOf(offset);
    if (seg === undefined) return;
    const i = offset - seg.firstOffset;
    if (i >= seg.count) return;
    const r = seg.remove(i);
    if (r === undefined) return;
    const length = this.codec.byteLength(r);
    seg.deletedCount++;
    seg.deletedBytes += length;
    this.count--;
    this.bytes -= length;
    if (seg.deletedCount === seg.count && seg !== this.active) this.reclaim(seg);
  }

  isDeleted(offset: number): boolean {
    if (!Number.isInteger(offset)) return false;
    const seg = this.segmentOf(offset);
    return seg?.isDeleted(offset - seg.firstOffset) === true;
  }

  truncate(): void {
    if (this.segments.length === 1 && this.active.count === 0) return;
    for (const seg of this.segments) seg.dropped = true;
    this.active = this.newSegment(INITIAL_CAPACITY);
    this.segments = [this.active];
    this.count = 0;
    this.bytes = 0;
  }

  /** Removes a fully deleted segment (never the active one). */
  private reclaim(seg: Segment<T>): void {
    const i = this.segments.indexOf(seg);
    this.segments.splice(i, 1);
    seg.dropped = true;
    seg.release();
  }
}

class MemoryCursor<T> implements LogCursor<T> {
  offset = 0;
  timestamp = Number.NaN;
  #data: LogData<T>;
  #guard: Guard;
  #seg!: Segment<T>;
  /** Index in `#seg` of the next candidate; may lie past its end after a seek past the end. */
  #index = 0;
  /** The current record once read, else where to read it from (packed ones are built). */
  #record: T | undefined;
  #recordSeg: Segment<T> | undefined;
  #recordIndex = 0;

  constructor(data: LogData<T>, guard: Guard, offset: number) {
    this.#data = data;
    this.#guard = guard;
    this.seek(offset);
  }

  get record(): T {
    if (this.#record === undefined && this.#recordSeg !== undefined) {
      this.#record = this.#recordSeg.load(this.#recordIndex);
      this.#recordSeg = undefined;
    }
    return this.#record as T;
  }

  next(): boolean {
    if (this.#guard.closed) this.#guard.check();
    let seg = this.#seg;
    let i = this.#index;
    for (;;) {
      if (seg.dropped) {
        this.seek(seg.firstOffset + i);
        seg = this.#seg;
        i = this.#index;
      }
      i = seg.firstLive(i);
      if (i < seg.count) {
        this.offset = seg.firstOffset + i;
        this.timestamp = seg.timestamps[i]!;
        this.#seg = seg;
        this.#index = i + 1;
        this.#record = undefined;
        this.#recordSeg = seg;
        this.#recordIndex = i;
        return true;
      }
      if (seg === this.#data.active) {
        this.#seg = seg;
        this.#index = i;
        return false;
      }
      this.seek(seg.firstOffset + i);
      seg = this.#seg;
      i = this.#index;
    }
  }

  seek(offset: number): void {
    this.#guard.check();
    checkNumber(offset, 'cursor offset');
    const data = this.#data;
    const target = Math.max(Math.ceil(offset), data.firstOffset);
    const seg = data.segments[data.indexFrom(target)] ?? data.active;
    this.#seg = seg;
    this.#index = Math.max(0, target - seg.firstOffset);
  }
}

/** One open handle on a log's data. */
export class MemoryLog<T> implements Log<T> {
  readonly name: string;
  readonly #data: LogData<T>;
  readonly #guard: Guard;
  readonly #onClose: () => void;

  constructor(name: string, data: LogData<T>, onClose: () => void) {
    this.name = name;
    this.#data = data;
    this.#guard = new Guard(`log '${name}'`);
    this.#onClose = onClose;
  }

  get firstOffset(): number {
    this.#guard.check();
    return this.#data.firstOffset;
  }

  get nextOffset(): number {
    this.#guard.check();
    return this.#data.nextOffset;
  }

  get count(): number {
    this.#guard.check();
    return this.#data.count;
  }

  get bytes(): number {
    this.#guard.check();
    return this.#data.bytes;
  }

  append(record: T, timestamp: number): number {
    if (this.#guard.closed) this.#guard.check();
    if (typeof timestamp !== 'number' || Number.isNaN(timestamp)) {
      throw new TypeError(`timestamp must be a number, got ${String(timestamp)}`);
    }
    return this.#data.append(record, timestamp, this.#data.codec.byteLength(record));
  }

  sync(): Promise<void> {
    return this.#guard.closed
      ? Promise.reject(new ClosedError(`log '${this.name}' is closed`))
      : RESOLVED;
  }

  get(offset: number): T | undefined {
    this.#guard.check();
    return this.#data.get(offset);
  }

  timestampOf(offset: number): number {
    this.#guard.check();
    return this.#data.timestampOf(offset);
  }

  cursor(offset?: number): LogCursor<T> {
    this.#guard.check();
    return new MemoryCursor(this.#data, this.#guard, offset ?? 0);
  }

  segments(): readonly SegmentInfo[] {
    this.#guard.check();
    return this.#data.segments.map((seg) => seg.info());
  }

  offsetAt(timestamp: number): number {
    this.#guard.check();
    return this.#data.offsetAt(checkNumber(timestamp, 'timestamp'));
  }

  dropBefore(offset: number): number {
    this.#guard.check();
    return this.#data.dropBefore(checkNumber(offset, 'offset'));
  }

  markDeleted(offset: number): void {
    this.#guard.check();
    this.#data.markDeleted(offset);
  }

  isDeleted(offset: number): boolean {
    this.#guard.check();
    return this.#data.isDeleted(offset);
  }

  roll(): void {
    this.#guard.check();
    this.#data.roll();
  }

  truncate(): void {
    this.#guard.check();
    this.#data.truncate();
  }

  close(): Promise<void> {
    if (!this.#guard.closed) {
      this.#guard.closed = true;
      this.#onClose();
    }
    return RESOLVED;
  }
}
