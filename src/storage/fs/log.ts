/**
 * One log of the fs adapter: a directory of segment files (`0000000001.seg`, ...), their index
 * files, the deletion marks (`~deleted`) and the log's options (`~options`).
 *
 * Appends are encoded straight into a write buffer (`write-buffer.ts`) and become one `write`
 * per tick, or per fsync round while a `sync()` waits, or when the buffer is full (see
 * `durability.ts`). Everything needed to answer counts, seeks and acks lives in memory in the
 * segments' tables, loaded from index files on open, so reopening after a clean close reads no
 * records; after a crash only the tail segment's unindexed end is scanned and a torn last write
 * cut off (`recovery.ts`). The segment files themselves, their descriptors, the segment list
 * and their unlinks are `segment-files.ts`'s; rewriting a mostly deleted segment is
 * `compaction.ts`'s; the order in which deletions reach the disk is `deletions.ts`'s.
 *
 * Deletions reach the disk only after the records appended before them: a deletion mark, the
 * unlink of a segment left without live records and a compaction rewrite all wait until every
 * record appended before the `markDeleted` (or `dropBefore`) call is durable. In memory they
 * apply at once. Otherwise a crash could keep a deletion and lose what replaced the record (a
 * last-value queue's newer value waiting for its fsync round). A log opened with
 * `independentDeletions` has a deletion wait for its own record only.
 */
import path from 'node:path';
import { ClosedError, CorruptionError, type DataLossError } from '../../errors.js';
import type { Log, LogCursor, RecordCodec, SegmentInfo } from '../types.js';
import { Compactor, worthCompacting } from './compaction.js';
import { FsCursor } from './cursor.js';
import { Deletions } from './deletions.js';
import { type FsyncPolicy, SyncScheduler } from './durability.js';
import {
  CHUNK_CHECKSUM,
  FRAME_HEADER,
  frameDelta,
  frameTimestamp,
  SEGMENT_LAYOUT,
  writeFrame,
} from './frame.js';
import type { Handles } from './handles.js';
import type { FsIo } from './io.js';
import { loadLogOptions } from './log-options.js';
import { MARKS_FILE, MarksFile } from './marks.js';
import { FrameReader, type FrameSource } from './reader.js';
import { loadSegments, marksFileLost, reportLostMarks } from './recovery.js';
import type { Segment } from './segment.js';
import { listSegmentIds, SegmentFiles } from './segment-files.js';
import { writeSegmentIndex } from './segment-index.js';
import { checkSegmentList } from './segment-list.js';
import { WriteBuffer } from './write-buffer.js';

/** What a log gets from its namespace. */
export interface LogContext {
  readonly io: FsIo;
  /** The adapter's descriptor cache. */
  readonly handles: Handles;
  readonly policy: FsyncPolicy;
  /** Receives what recovery cut or repaired. */
  readonly report: (loss: DataLossError) => void;
  /** The log wrote its segment list before (its namespace's `~logs` says so): a missing one is a loss. */
  readonly segmentListExpected: boolean;
  /** A deletion waits for its own record only (`LogOptions.independentDeletions`). */
  readonly independentDeletions: boolean;
  /** Called once the log is closed or destroyed, so the namespace forgets the instance. */
  readonly onClose: () => void;
}

/** The error for a record its codec cannot decode (apart, to keep `decodeAt` small to inline). */
function undecodable(seg: Segment, bytes: Uint8Array, at: number, cause: unknown): CorruptionError {
  return new CorruptionError(
    `record ${seg.firstOffset + frameDelta(bytes, at)} in ${seg.file} cannot be decoded`,
    { cause },
  );
}

export class FsLog<T> implements Log<T>, FrameSource {
  readonly name: string;
  readonly io: FsIo;
  /** The frames appended and not yet written: the active segment's bytes from its `fileSize` on. */
  readonly writeBuffer = new WriteBuffer();
  /**
   * The codec's functions, bound once per log. A process uses several codecs, so calls through
   * `codec.x` would see several object shapes at each per-record call site (a megamorphic lookup,
   * ~30% of a hot cursor read); fields of the log always have one.
   */
  readonly #byteLength: (record: T) => number;
  readonly #encode: (record: T) => Uint8Array;
  readonly #encodeInto: ((record: T, target: Uint8Array, offset: number) => number) | undefined;
  readonly #decodeFrom: (bytes: Uint8Array, offset: number, length: number) => T;
  readonly #decodeView: ((bytes: Uint8Array, offset: number, length: number) => T) | undefined;
  /** Whether the codec decodes records as views of the bytes (see `decodeAt`). */
  readonly decodesViews: boolean;
  /** Bumped when the log closes and when a segment is dropped or rewritten (see cursors). */
  epoch = 0;

  readonly #dir: string;
  readonly #ctx: LogContext;
  readonly #segmentBytes: number;
  readonly #scheduler: SyncScheduler;
  readonly #reader: FrameReader;
  readonly #files: SegmentFiles;
  #segs: Segment[] = [];
  #active!: Segment;
  #nextOffset = 1;
  #live = 0;
  #liveBytes = 0;
  #marks!: MarksFile;
  #deletions!: Deletions;
  #closed = false;
  readonly #compactor: Compactor;
  /** Sealed segments whose index is written with the next flush (unless dropped by then). */
  #unindexed: Segment[] = [];

  /**
   * Opens the log stored in `dir`, creating it with `segmentBytes` if it does not exist (an
   * existing log keeps the size it was created with).
   */
  constructor(
    dir: string,
    name: string,
    codec: RecordCodec<T>,
    segmentBytes: number,
    ctx: LogContext,
  ) {
    this.name = name;
    this.#byteLength = codec.byteLength.bind(codec);
    this.#encode = codec.encode.bind(codec);
    this.#encodeInto = codec.encodeInto?.bind(codec);
    this.#decodeFrom = codec.decodeFrom
      ? codec.decodeFrom.bind(codec)
      : (bytes, offset, length) => codec.decode(bytes.subarray(offset, offset + length));
    this.#decodeView = codec.decodeView?.bind(codec);
    this.decodesViews = this.#decodeView !== undefined;
    this.io = ctx.io;
    this.#dir = dir;
    this.#ctx = ctx;
    this.#segmentBytes = loadLogOptions(ctx.io, dir, segmentBytes, ctx.policy !== 'never');
    this.#scheduler = new SyncScheduler(ctx.policy, {
      flush: () => this.#flush(),
      fsync: (done) => this.#deletions.fsync(done),
      // The write buffer and the pending marks only grow until written (see `#writeBatch`).
      redoesFailedFlush: true,
    });
    this.#reader = new FrameReader(this, 16 * 1024);
    this.#files = new SegmentFiles(ctx.handles, dir, ctx.policy !== 'never', () => this.#segs);
    this.#compactor = new Compactor({
      io: ctx.io,
      files: this.#files,
      fsync: ctx.policy !== 'never',
      closed: () => this.#closed,
      durableEnd: () => this.#deletions.durableEnd,
      replaced: () => {
        this.epoch++;
      },
      compacted: (removed) => {
        this.#marks.stale += removed;
      },
      fail: (error) => this.#scheduler.fail(error),
    });
    try {
      this.#load();
    } catch (error) {
      this.#releaseFiles();
      throw error;
    }
  }

  get firstOffset(): number {
    this.#check();
    return this.#segs[0]!.firstOffset;
  }

  get nextOffset(): number {
    this.#check();
    return this.#nextOffset;
  }

  get count(): number {
    this.#check();
    return this.#live;
  }

  get bytes(): number {
    this.#check();
    return this.#liveBytes;
  }

  append(record: T, timestamp: number): number {
    this.#check();
    if (typeof timestamp !== 'number' || Number.isNaN(timestamp)) {
      throw new TypeError(`timestamp must be a number, got ${String(timestamp)}`);
    }
    // After a failed write, this append waits for nothing the failed one held: write that first.
    if (this.#scheduler.failure) this.#scheduler.recover();
    if (this.#nextOffset >= this.#files.offsetsBelow) this.#files.writeList(this.#nextOffset);
    // Encoded before anything changes, so a record the codec refuses leaves the log as it was.
    // Straight into the write buffer when the codec can: no scratch copy.
    const buffer = this.writeBuffer;
    const encodedAt = buffer.used + FRAME_HEADER;
    let payload: Uint8Array | undefined;
    const encodeInto = this.#encodeInto;
    let length = encodeInto ? encodeInto(record, buffer.buffer, encodedAt) : -1;
    if (length < 0) {
      payload = this.#encode(record);
      length = payload.length;
    }
    const byteLength = this.#byteLength(record);
    const frameLength = FRAME_HEADER + length + CHUNK_CHECKSUM;
    let seg = this.#active;
    // A tail segment of an older layout is sealed as it is: frames of two layouts never mix.
    if (
      (seg.span > 0 && seg.bytes + byteLength > this.#segmentBytes) ||
      seg.layout !== SEGMENT_LAYOUT
    ) {
      seg = this.#roll();
    }
    if (buffer.used + frameLength > buffer.bytes.length) this.#makeRoom(frameLength);
    const at = buffer.used;
    const offset = this.#nextOffset;
    const delta = offset - seg.firstOffset;
    // A roll wrote the buffer out (same buffer, now empty): move the record to its new place.
    if (payload) buffer.bytes.set(payload, at + FRAME_HEADER);
    else if (at + FRAME_HEADER !== encodedAt) {
      buffer.bytes.copyWithin(at + FRAME_HEADER, encodedAt, encodedAt + length);
    }
    // A chunk ends before each frame that starts a span of the sparse index.
    if (buffer.chunkStart < at && seg.startsSpan(seg.size)) buffer.endChunk(at);
    writeFrame(buffer.fields, at, length, delta, byteLength, timestamp);
    seg.add(delta, byteLength, timestamp, seg.size, frameLength);
    buffer.used = at + frameLength;
    buffer.chunkLast = at;
    this.#nextOffset = offset + 1;
    this.#live++;
    this.#liveBytes += byteLength;
    this.#scheduler.touch();
    return offset;
  }

  sync(): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    return this.#scheduler.sync();
  }

  get(offset: number): T | undefined {
    this.#check();
    const seg = this.#find(offset);
    if (!seg) return undefined;
    const slot = seg.slotOf(offset);
    if (slot < 0 || seg.isDeletedSlot(slot)) return undefined;
    const reader = this.#reader;
    reader.locate(seg, slot, offset);
    return this.decodeAt(seg, reader.bytes, reader.at, reader.length, false);
  }

  timestampOf(offset: number): number {
    this.#check();
    const seg = this.#find(offset);
    const slot = seg ? seg.slotOf(offset) : -1;
    if (!seg || slot < 0) return Number.NaN;
    this.#reader.locate(seg, slot, offset);
    return frameTimestamp(this.#reader.fields, this.#reader.at);
  }

  cursor(offset?: number): LogCursor<T> {
    this.#check();
    return new FsCursor(this, offset ?? 0);
  }

  segments(): readonly SegmentInfo[] {
    this.#check();
    return this.#segs.slice();
  }

  offsetAt(timestamp: number): number {
    this.#check();
    const segs = this.#segs;
    // First segment whose last record is at or after the timestamp (timestamps do not decrease).
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const seg = segs[mid]!;
      if (seg.slots === 0 || seg.lastTimestamp < timestamp) lo = mid + 1;
      else hi = mid;
    }
    const reader = this.#reader;
    for (; lo < segs.length; lo++) {
      const seg = segs[lo]!;
      if (seg.slots === 0) continue;
      const offset = reader.offsetAt(seg, timestamp);
      if (offset >= 0) return offset;
    }
    return this.#nextOffset;
  }

  dropBefore(offset: number): number {
    this.#check();
    let dropped = 0;
    while (this.#segs.length > 1 && this.#segs[0]!.lastOffset < offset) {
      const seg = this.#segs[0]!;
      dropped += seg.live;
      this.#drop(seg, this.#nextOffset);
    }
    return dropped;
  }

  markDeleted(offset: number): void {
    this.#check();
    const seg = this.#find(offset);
    if (!seg) return;
    const slot = seg.slotOf(offset);
    if (slot < 0 || !seg.markSlot(slot)) return;
    this.#live--;
    this.#liveBytes -= seg.lens[slot]!;
    const need = this.#ctx.independentDeletions ? offset + 1 : this.#nextOffset;
    if (need > seg.deletionNeed) seg.deletionNeed = need;
    this.#deletions.mark(offset, need);
    if (seg !== this.#active) this.#reclaim(seg);
  }

  isDeleted(offset: number): boolean {
    this.#check();
    if (!Number.isInteger(offset)) return false;
    const seg = this.#find(offset);
    if (!seg) return false;
    const slot = seg.slotOf(offset);
    return slot < 0 || seg.isDeletedSlot(slot);
  }

  roll(): void {
    this.#check();
    if (this.#active.span > 0) this.#roll();
  }

  advanceTo(offset: number): void {
    this.#check();
    if (!Number.isSafeInteger(offset) || offset <= this.#nextOffset) return;
    this.#roll(offset);
    this.#nextOffset = offset;
  }

  truncate(): void {
    this.#check();
    this.writeBuffer.clear();
    this.#active.size = this.#active.fileSize;
    const old = this.#segs;
    const fresh = this.#files.create(this.#active.id + 1, this.#nextOffset, this.#nextOffset);
    this.#segs = [fresh];
    this.#active = fresh;
    // Every record goes: no deletion has anything to wait for.
    for (const seg of old) this.#forget(seg);
    this.#files.remove([...old, ...this.#files.takeHeld()], this.#nextOffset);
    this.#live = 0;
    this.#liveBytes = 0;
    this.#marks.clear(this.#ctx.policy !== 'never');
    this.#files.dirUnsynced = true;
    this.#scheduler.touch();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.epoch++;
    try {
      // A log that already failed has reported it to its writers; closing it only releases the
      // files, and the next open recovers from what reached the disk.
      if (!this.#scheduler.failure) {
        await this.#scheduler.drain();
        writeSegmentIndex(this.io, this.#active);
      }
    } finally {
      this.#scheduler.stop(this.#closedError());
      this.#releaseFiles();
      this.#ctx.onClose();
    }
  }

  /** Closes without writing anything: the log's directory is about to be removed. */
  destroy(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.epoch++;
    this.#scheduler.stop(this.#closedError());
    this.#releaseFiles();
    this.#ctx.onClose();
  }

  // --- used by cursors ----------------------------------------------------------------------

  /** Throws MQLITE_CLOSED once closed. */
  check(): void {
    this.#check();
  }

  /** The retained segments, oldest first (the live array: do not modify). */
  get segs(): readonly Segment[] {
    return this.#segs;
  }

  /** The segment after `seg`, or undefined if `seg` is the last. */
  segmentAfter(seg: Segment): Segment | undefined {
    const segs = this.#segs;
    let i = segs.length - 1;
    while (i >= 0 && segs[i]!.id > seg.id) i--;
    return segs[i + 1];
  }

  /**
   * Decodes the frame of `length` bytes at `bytes[at]`, as views of `bytes` when `view` (only if
   * {@link decodesViews}, for bytes never reused); a codec failure means corrupt data.
   */
  decodeAt(seg: Segment, bytes: Uint8Array, at: number, length: number, view: boolean): T {
    try {
      const from = at + FRAME_HEADER;
      const n = length - seg.frameOverhead;
      return view ? this.#decodeView!(bytes, from, n) : this.#decodeFrom(bytes, from, n);
    } catch (error) {
      throw undecodable(seg, bytes, at, error);
    }
  }

  fdOf(seg: Segment): number {
    return this.#files.fdOf(seg);
  }

  // --- internals ----------------------------------------------------------------------------

  #check(): void {
    if (this.#closed) throw this.#closedError();
  }

  #closedError(): ClosedError {
    return new ClosedError(`log '${this.name}' is closed`);
  }

  /** The segment whose offset range holds `offset`, if retained. */
  #find(offset: number): Segment | undefined {
    const segs = this.#segs;
    let lo = 0;
    let hi = segs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (segs[mid]!.firstOffset <= offset) lo = mid + 1;
      else hi = mid;
    }
    const seg = segs[lo - 1];
    return seg && offset <= seg.lastOffset ? seg : undefined;
  }

  #load(): void {
    const io = this.io;
    const dir = this.#dir;
    const report = this.#ctx.report;
    const found = listSegmentIds(io, dir);
    const marksLost = marksFileLost(io, dir);
    const expected = this.#ctx.segmentListExpected;
    const listed = checkSegmentList(io, dir, this.name, found, expected, report);
    this.#files.offsetsBelow = listed.offsetsBelow;
    loadSegments(io, dir, listed.ids, report, this.#segs);
    const resume = listed.tailLost ? listed.offsetsBelow : 1;
    // Creating the first segment writes the list (naming it, with a bound past `resume`).
    const created = this.#segs.length === 0;
    if (created) this.#segs.push(this.#files.create(listed.lastId + 1, resume, this.#nextOffset));
    this.#active = this.#segs.at(-1)!;
    this.#nextOffset = this.#active.firstOffset + this.#active.span;
    if (marksLost) reportLostMarks(dir, this.#segs, report);
    this.#marks = new MarksFile(this.#ctx.handles, path.join(dir, MARKS_FILE), (offset) => {
      const seg = this.#find(offset);
      const slot = seg ? seg.slotOf(offset) : -1;
      return seg !== undefined && slot >= 0 && seg.markSlot(slot);
    });
    this.#deletions = new Deletions(
      {
        files: this.#files,
        marks: this.#marks,
        scheduler: this.#scheduler,
        fsyncs: this.#ctx.policy !== 'never',
        nextOffset: () => this.#nextOffset,
        segs: () => this.#segs,
        released: () => this.#compactor.retry(),
      },
      this.#nextOffset,
    );
    for (const seg of this.#segs) {
      this.#live += seg.live;
      this.#liveBytes += seg.bytes - seg.deletedBytes;
    }
    for (const seg of this.#segs.slice(0, -1)) this.#reclaim(seg);
    // Past every offset the lost tail may have handed out: none is handed out twice.
    if (this.#nextOffset < resume) {
      this.#roll(resume);
      this.#nextOffset = this.#deletions.durableEnd = resume;
    }
    if ((listed.rewrite && !created) || this.#nextOffset >= this.#files.offsetsBelow) {
      this.#files.writeList(this.#nextOffset);
    }
  }

  // --- the write path -----------------------------------------------------------------------

  /** Grows the write buffer while a burst fits in its largest size, else writes it out first. */
  #makeRoom(frameLength: number): void {
    if (this.writeBuffer.isFullFor(frameLength)) this.#writeOrFail();
    this.writeBuffer.fit(frameLength);
  }

  /** Writes the buffer; an I/O error fails the log until a write succeeds (see `recover()`). */
  #writeOrFail(): void {
    try {
      this.#writeBatch();
    } catch (error) {
      this.#scheduler.failWrite(error as Error);
      throw error;
    }
  }

  #writeBatch(): void {
    const seg = this.#active;
    if (this.writeBuffer.used === 0) return;
    const handle = this.#files.handleOf(seg);
    this.writeBuffer.writeTo(this.io, handle.fd, seg);
    handle.wrote();
    if (this.#ctx.policy === 'never') this.#deletions.durableEnd = this.#nextOffset;
  }

  #flush(): void {
    this.#writeBatch();
    if (this.#unindexed.length > 0) {
      for (const seg of this.#unindexed) if (!seg.dropped) writeSegmentIndex(this.io, seg);
      this.#unindexed = [];
    }
    this.#deletions.flush();
  }

  /**
   * Seals the active segment (writing its index) and starts a new one at `firstOffset`; an empty
   * one sealed goes at once.
   */
  #roll(firstOffset = this.#nextOffset): Segment {
    this.#writeOrFail();
    const old = this.#active;
    old.trim();
    // The index is a cache: written with the next flush, so a segment whose records are all
    // deleted by then (a last-value log's usual fate) never has one.
    this.#unindexed.push(old);
    this.#scheduler.touch();
    const seg = this.#files.create(old.id + 1, firstOffset, this.#nextOffset);
    // Segments of one log hold similar records: skip the tables' doubling from empty.
    seg.reserve(old.slots);
    this.#segs.push(seg);
    this.#active = seg;
    this.#reclaim(old);
    return seg;
  }

  // --- deletions ----------------------------------------------------------------------------

  /** Drops a sealed segment with no live record; queues a mostly deleted one for compaction. */
  #reclaim(seg: Segment): void {
    if (seg.live === 0) this.#drop(seg, seg.deletionNeed);
    else if (worthCompacting(seg)) this.#compactor.add(seg);
  }

  /**
   * Drops a segment from memory at once; its files go once every record below `need` is
   * durable (see the header).
   */
  #drop(seg: Segment, need: number): void {
    const i = this.#segs.indexOf(seg);
    if (i >= 0) this.#segs.splice(i, 1);
    this.#live -= seg.live;
    this.#liveBytes -= seg.bytes - seg.deletedBytes;
    this.#marks.stale += seg.deletedCount - (seg.span - seg.slots);
    this.#forget(seg);
    this.#deletions.removeFiles(seg, need);
  }

  /** Takes a segment out of use: cursors move on, its descriptor closes. */
  #forget(seg: Segment): void {
    seg.dropped = true;
    this.epoch++;
    this.#compactor.delete(seg);
    this.#files.close(seg);
  }

  #releaseFiles(): void {
    this.#files.closeAll(this.#segs);
    this.#marks?.close();
  }
}
