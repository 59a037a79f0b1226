/**
 * One log of the fs adapter: a directory of segment files (`0000000001.seg`, ...), their index
 * files, the deletion marks (`~deleted`) and the log's options (`~options`).
 *
 * Appends are encoded straight into a write buffer and become one `write` per tick, or per fsync
 * round while a `sync()` waits, or when the buffer is full (see `durability.ts`). Everything
 * needed to answer counts, seeks and acks lives in memory in the segments' tables, loaded from
 * index files on open, so reopening after a clean close reads no records; after a crash only the
 * tail segment's unindexed end is scanned and a torn last write cut off.
 *
 * Deletions reach the disk only after the records appended before them: a deletion mark, the
 * unlink of a segment left without live records and a compaction rewrite all wait until every
 * record appended before the `markDeleted` (or `dropBefore`) call is durable. In memory they
 * apply at once. Otherwise a crash could keep a deletion and lose what replaced the record (a
 * last-value queue's newer value waiting for its fsync round).
 */
import path from 'node:path';
import { errorChannel } from '../../diagnostics.js';
import { ClosedError, CorruptionError, DataLossError } from '../../errors.js';
import type { Log, LogCursor, RecordCodec, SegmentInfo } from '../types.js';
import { FsCursor } from './cursor.js';
import { type FsyncPolicy, SyncScheduler } from './durability.js';
import {
  CHUNK_CHECKSUM,
  checkRun,
  copyFrame,
  endChunk,
  FILE_HEADER,
  FRAME_CHECKSUM_LAYOUT,
  FRAME_HEADER,
  fieldsOf,
  fileHeader,
  frameDelta,
  frameTimestamp,
  parseFileHeader,
  SEGMENT_LAYOUT,
  writeFrame,
} from './frame.js';
import {
  allDone,
  type FsIo,
  fsyncDir,
  fsyncDirSync,
  readFile,
  readFully,
  replaceFile,
  replaceFileOpen,
  writeFully,
} from './io.js';
import { MarksFile } from './marks.js';
import { FrameReader, type FrameSource } from './reader.js';
import { corruptRecord, scanSegment } from './recovery.js';
import { Segment, segmentFileName } from './segment.js';
import { readSegmentIndex, writeSegmentIndex } from './segment-index.js';
import { readSegmentList, writeSegmentList } from './segment-list.js';

/** Write buffer size a log starts with; it doubles up to {@link MAX_BATCH} under load. */
const MIN_BATCH = 64 * 1024;
const MAX_BATCH = 1024 * 1024;
/** Sealed segments kept open for reading per log. */
const MAX_OPEN_SEGMENTS = 8;
/** Records a sealed segment needs before compaction is worth a rewrite. */
const COMPACT_MIN_RECORDS = 64;
/**
 * Stale marks that make the marks file worth rewriting (if they also outnumber live ones). A
 * rewrite fsyncs the new file on the calling thread, and a last-value log makes a segment's
 * worth of marks stale every few thousand acks: 16 Ki (128 KiB of file) keeps that to one
 * rewrite per ~16 k acks.
 */
const STALE_MARKS_REWRITE = 16 * 1024;

/**
 * Offsets handed out per write of the segment list's bound (see `segment-list.ts`): a log that
 * lost its tail segment continues at most this far past the offsets it had handed out.
 */
const OFFSET_LEASE = 4096;

export const OPTIONS_FILE = '~options';
export const MARKS_FILE = '~deleted';
export const LIST_FILE = '~segments';

/** What a log gets from its namespace. */
export interface LogContext {
  readonly io: FsIo;
  readonly policy: FsyncPolicy;
  /** Receives what recovery cut or repaired. */
  readonly report: (loss: DataLossError) => void;
  /** The log wrote its segment list before (its namespace's `~logs` says so): a missing one is a loss. */
  readonly segmentListExpected: boolean;
  /** Called once the log is closed or destroyed, so the namespace forgets the instance. */
  readonly onClose: () => void;
}

function plainView(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length);
}

type Job = (done: (error: Error | null) => void) => void;

/** The error for a record its codec cannot decode (apart, to keep `decodeAt` small to inline). */
function undecodable(seg: Segment, bytes: Uint8Array, at: number, cause: unknown): CorruptionError {
  return new CorruptionError(
    `record ${seg.firstOffset + frameDelta(bytes, at)} in ${seg.file} cannot be decoded`,
    { cause },
  );
}

function missingSegment(file: string, log: string, tail: boolean, resumes: number): DataLossError {
  const next = tail
    ? `; the log continues at offset ${resumes}, past every offset it handed out`
    : '';
  return new DataLossError(
    'missing',
    `segment ${file} of log '${log}' is missing: the records it held are lost${next}`,
    { file },
  );
}

function removeIfThere(io: FsIo, file: string): void {
  try {
    io.unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function tornWrite(file: string, end: number, size: number): DataLossError {
  return new DataLossError(
    'torn-write',
    `cut ${size - end} bytes of an unconfirmed write off the end of ${file} at byte ${end}`,
    { file, position: end, end: size, bytes: size - end },
  );
}

/**
 * The segment size a log's `~options` file (`stored`, read from `file`) holds.
 *
 * @throws CorruptionError when it is not such JSON.
 */
export function parseLogOptions(stored: Buffer, file: string): number {
  let options: { segmentBytes?: unknown } | null;
  try {
    options = JSON.parse(stored.toString('utf8')) as typeof options;
  } catch (cause) {
    throw new CorruptionError(`${file} is not JSON`, { cause, file });
  }
  const size = options?.segmentBytes;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1) {
    throw new CorruptionError(`${file} holds no valid segmentBytes`, { file });
  }
  return size;
}

export class FsLog<T> implements Log<T>, FrameSource {
  readonly name: string;
  readonly io: FsIo;
  /**
   * The write buffer, as a Buffer for the codec and the file writes, as a plain Uint8Array view
   * of the same bytes for checksums and readers (the per-record code then sees one kind of array
   * whichever buffer it reads: two would make its loads polymorphic), and as a DataView for
   * frame headers (a few wide stores instead of two dozen byte stores).
   */
  #batchBuffer: Buffer = Buffer.allocUnsafe(MIN_BATCH);
  batch: Uint8Array = plainView(this.#batchBuffer);
  batchFields: DataView = fieldsOf(this.batch);
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
  #segs: Segment[] = [];
  #active!: Segment;
  #nextOffset = 1;
  #live = 0;
  #liveBytes = 0;
  #batchLen = 0;
  /** Where the write buffer's open checksum chunk starts, and its last frame. */
  #chunkStart = 0;
  #chunkLast = 0;
  #marks!: MarksFile;
  #staleMarks = 0;
  #dirUnsynced = false;
  /** Every record below this offset is durable per the policy (written, under `never`). */
  #durableEnd = 1;
  /** Segments dropped in memory whose files wait for the records before the drop. */
  #heldUnlinks: { seg: Segment; need: number }[] = [];
  #closed = false;
  /** Sealed segments with an open descriptor, oldest first. */
  readonly #open = new Set<Segment>();
  readonly #toCompact = new Set<Segment>();
  /** Sealed segments whose index is written with the next flush (unless dropped by then). */
  #unindexed: Segment[] = [];
  #compactQueued = false;
  /** Every offset handed out is below this one, as the segment list on disk says. */
  #offsetsBelow = 0;

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
    this.#segmentBytes = this.#loadOptions(segmentBytes);
    this.#scheduler = new SyncScheduler(ctx.policy, {
      flush: () => this.#flush(),
      fsync: (done) => this.#fsync(done),
      // The write buffer and the pending marks only grow until written (see `#writeBatch`).
      redoesFailedFlush: true,
    });
    this.#reader = new FrameReader(this, 16 * 1024);
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
    if (this.#nextOffset >= this.#offsetsBelow) this.#writeList(this.#nextOffset);
    // Encoded before anything changes, so a record the codec refuses leaves the log as it was.
    // Straight into the write buffer when the codec can: no scratch copy.
    const encodedAt = this.#batchLen + FRAME_HEADER;
    let payload: Uint8Array | undefined;
    const encodeInto = this.#encodeInto;
    let length = encodeInto ? encodeInto(record, this.#batchBuffer, encodedAt) : -1;
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
    if (this.#batchLen + frameLength > this.batch.length) this.#makeRoom(frameLength);
    const at = this.#batchLen;
    const offset = this.#nextOffset;
    const delta = offset - seg.firstOffset;
    // A roll wrote the buffer out (same buffer, now empty): move the record to its new place.
    if (payload) this.batch.set(payload, at + FRAME_HEADER);
    else if (at + FRAME_HEADER !== encodedAt) {
      this.batch.copyWithin(at + FRAME_HEADER, encodedAt, encodedAt + length);
    }
    // A chunk ends before each frame that starts a span of the sparse index.
    if (this.#chunkStart < at && seg.startsSpan(seg.size)) this.#endChunk(at);
    writeFrame(this.batchFields, at, length, delta, byteLength, timestamp);
    seg.add(delta, byteLength, timestamp, seg.size, frameLength);
    this.#batchLen = at + frameLength;
    this.#chunkLast = at;
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
    this.#locate(seg, slot, offset);
    const reader = this.#reader;
    return this.decodeAt(seg, reader.bytes, reader.at, reader.length, false);
  }

  timestampOf(offset: number): number {
    this.#check();
    const seg = this.#find(offset);
    const slot = seg ? seg.slotOf(offset) : -1;
    if (!seg || slot < 0) return Number.NaN;
    this.#locate(seg, slot, offset);
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
      let pos = seg.sparsePos[seg.sparseBeforeTime(timestamp)]!;
      while (reader.read(seg, pos, false)) {
        if (frameTimestamp(reader.fields, reader.at) >= timestamp) {
          return seg.firstOffset + frameDelta(reader.bytes, reader.at);
        }
        pos += reader.length;
      }
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
    const need = this.#nextOffset;
    seg.deletionNeed = need;
    this.#marks.add(offset, need);
    this.#scheduler.touch();
    // The records before it reach the disk with the next round; the log asks for one itself.
    if (need > this.#durableEnd && this.#ctx.policy !== 'never') this.#scheduler.request();
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
    this.#batchLen = 0;
    this.#chunkStart = 0;
    this.#active.size = this.#active.fileSize;
    const old = this.#segs;
    const fresh = this.#create(this.#active.id + 1, this.#nextOffset);
    this.#segs = [fresh];
    this.#active = fresh;
    // Every record goes: no deletion has anything to wait for.
    for (const seg of old) this.#forget(seg);
    const gone = [...old, ...this.#heldUnlinks.map((held) => held.seg)];
    this.#heldUnlinks = [];
    this.#removeFiles(gone);
    this.#live = 0;
    this.#liveBytes = 0;
    this.#staleMarks = 0;
    this.#marks.discardPending();
    this.#marks.rewrite([], this.#ctx.policy !== 'never');
    this.#dirUnsynced = true;
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
    if (seg.fd >= 0) return seg.fd;
    seg.fd = this.io.openSync(seg.file, 'r');
    this.#open.add(seg);
    if (this.#open.size > MAX_OPEN_SEGMENTS) {
      for (const old of this.#open) {
        if (old === seg || old.pinned > 0 || old.unsynced) continue;
        this.#closeFd(old);
        break;
      }
    }
    return seg.fd;
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

  /** Positions the log's reader on the frame of `slot`, checking it holds `offset`. */
  #locate(seg: Segment, slot: number, offset: number): void {
    const entry = seg.sparseBefore(slot);
    let s = seg.sparseSlot[entry]!;
    let pos = seg.sparsePos[entry]!;
    const reader = this.#reader;
    for (; s < slot; s++) {
      if (!reader.read(seg, pos, false)) break;
      pos += reader.length;
    }
    if (
      !reader.read(seg, pos, true) ||
      seg.firstOffset + frameDelta(reader.bytes, reader.at) !== offset
    ) {
      throw corruptRecord(seg.file, pos, `does not hold offset ${offset}`);
    }
  }

  #loadOptions(segmentBytes: number): number {
    const file = path.join(this.#dir, OPTIONS_FILE);
    const stored = readFile(this.io, file);
    if (stored) return parseLogOptions(stored, file);
    const fsync = this.#ctx.policy !== 'never';
    replaceFile(this.io, file, Buffer.from(JSON.stringify({ segmentBytes })), fsync);
    return segmentBytes;
  }

  #load(): void {
    let ids: number[] = [];
    for (const entry of this.io.readdirSync(this.#dir)) {
      if (entry.endsWith('.tmp')) this.io.unlinkSync(path.join(this.#dir, entry));
      else if (/^\d{10}\.seg$/.test(entry)) ids.push(Number(entry.slice(0, 10)));
    }
    ids.sort((a, b) => a - b);
    // A log with its list is one opened before, which created its marks file then.
    const marksFile = path.join(this.#dir, MARKS_FILE);
    const marksExpected =
      this.io.existsSync(path.join(this.#dir, LIST_FILE)) && !this.io.existsSync(marksFile);
    const listed = this.#checkList(ids);
    ids = listed.ids;
    for (const [i, id] of ids.entries()) {
      const seg = this.#loadSegment(id, i === ids.length - 1);
      const prev = this.#segs.at(-1);
      if (prev && seg.firstOffset <= prev.lastOffset) {
        throw new CorruptionError(`segment ${seg.file} overlaps ${prev.file}`);
      }
      this.#segs.push(seg);
    }
    const resume = listed.tailLost ? listed.offsetsBelow : 1;
    if (this.#segs.length === 0) this.#segs.push(this.#create(listed.lastId + 1, resume));
    this.#active = this.#segs.at(-1)!;
    this.#nextOffset = this.#active.firstOffset + this.#active.span;
    this.#durableEnd = this.#nextOffset;
    if (marksExpected && this.#segs.some((seg) => seg.span > 0)) {
      this.#ctx.report(
        new DataLossError(
          'missing',
          `${marksFile} is missing: the deletions (acks) it held are lost, so records deleted before may be delivered again`,
          { file: marksFile },
        ),
      );
    }
    this.#marks = new MarksFile(this.io, marksFile, (offset) => {
      const seg = this.#find(offset);
      const slot = seg ? seg.slotOf(offset) : -1;
      if (!seg || slot < 0 || !seg.markSlot(slot)) this.#staleMarks++;
    });
    for (const seg of this.#segs) {
      this.#live += seg.live;
      this.#liveBytes += seg.bytes - seg.deletedBytes;
    }
    for (const seg of this.#segs.slice(0, -1)) this.#reclaim(seg);
    // Past every offset the lost tail may have handed out: none is handed out twice.
    if (this.#nextOffset < resume) {
      this.#roll(resume);
      this.#nextOffset = this.#durableEnd = resume;
    }
    if (listed.rewrite || this.#nextOffset >= this.#offsetsBelow) this.#writeList(this.#nextOffset);
  }

  /**
   * Checks the segment files found (`ids`, ascending) against the segment list: reports each
   * listed one that is missing, finishes the unlinks a crash cut short (files the list no longer
   * names, below its last id), and says which ids to load and where a lost tail leaves the
   * offsets. A log of an older format version, without a list, gets one.
   */
  #checkList(ids: number[]): {
    ids: number[];
    lastId: number;
    tailLost: boolean;
    offsetsBelow: number;
    rewrite: boolean;
  } {
    const file = path.join(this.#dir, LIST_FILE);
    const list = readSegmentList(this.io, file);
    const lastFound = ids.at(-1) ?? 0;
    if (list === undefined || list === 'damaged') {
      if (list === 'damaged' || this.#ctx.segmentListExpected) {
        const how = list === 'damaged' ? 'damaged' : 'missing';
        this.#ctx.report(
          new DataLossError(
            list === 'damaged' ? 'skipped' : 'missing',
            `${file} is ${how}: the segment files present are taken as the whole log, so a segment lost with it would not be found`,
            { file },
          ),
        );
      }
      return { ids, lastId: lastFound, tailLost: false, offsetsBelow: 1, rewrite: true };
    }
    this.#offsetsBelow = list.offsetsBelow;
    const lastId = Math.max(lastFound, list.ids.at(-1) ?? 0);
    const present = new Set(ids);
    const named = new Set(list.ids);
    const kept: number[] = [];
    let rewrite = false;
    for (const id of ids) {
      if (named.has(id) || id > (list.ids.at(-1) ?? 0)) {
        kept.push(id);
        continue;
      }
      // Taken off the list before its unlink: the crash came in between.
      const seg = new Segment(this.#dir, id, 0, 0);
      removeIfThere(this.io, seg.file);
      removeIfThere(this.io, seg.indexFile);
      rewrite = true;
    }
    const lastKept = kept.at(-1) ?? 0;
    let tailLost = false;
    for (const id of list.ids) {
      if (present.has(id)) continue;
      const tail = id > lastKept;
      tailLost ||= tail;
      const seg = new Segment(this.#dir, id, 0, 0);
      this.#ctx.report(missingSegment(seg.file, this.name, tail, list.offsetsBelow));
      rewrite = true;
    }
    return { ids: kept, lastId, tailLost, offsetsBelow: list.offsetsBelow, rewrite };
  }

  /** Loads one segment from its index, scanning what the index does not cover. */
  #loadSegment(id: number, tail: boolean): Segment {
    const file = path.join(this.#dir, segmentFileName(id));
    const fd = this.io.openSync(file, tail ? 'r+' : 'r');
    let seg: Segment | undefined;
    try {
      const head = Buffer.alloc(FILE_HEADER);
      const size = this.io.sizeSync(fd);
      const header = parseFileHeader(
        head.subarray(0, readFully(this.io, fd, head, 0, FILE_HEADER, 0)),
      );
      if (!header) throw new CorruptionError(`segment ${file} has no valid header`);
      if (header.layout !== SEGMENT_LAYOUT && header.layout !== FRAME_CHECKSUM_LAYOUT) {
        throw new CorruptionError(
          `segment ${file} has layout ${header.layout}, expected ${FRAME_CHECKSUM_LAYOUT} or ${SEGMENT_LAYOUT}`,
        );
      }
      seg = new Segment(this.#dir, id, header.firstOffset, header.generation, header.layout);
      seg.indexed = true; // whether or not it is usable, an index file may exist
      const covered = readSegmentIndex(this.io, seg, size);
      if (covered < size) {
        const end = scanSegment(this.io, fd, seg, Math.max(covered, FILE_HEADER), size, tail);
        if (end < size) {
          this.#ctx.report(tornWrite(file, end, size));
          this.io.ftruncateSync(fd, end);
        }
        if (covered <= FILE_HEADER) seg.verifiedTo = end;
      }
      if (tail) {
        seg.fd = fd;
        return seg;
      }
      seg.trim();
      if (covered < size) writeSegmentIndex(this.io, seg);
      this.io.closeSync(fd);
      return seg;
    } catch (error) {
      this.io.closeSync(fd);
      throw error;
    }
  }

  /**
   * Creates an empty segment file (atomically: written aside, then renamed) and makes it durable,
   * then lists it: a crash in between leaves a file past the list's last, which holds no
   * confirmed record, and the list never names a file a power cut may lose.
   */
  #create(id: number, firstOffset: number): Segment {
    const seg = new Segment(this.#dir, id, firstOffset, 0);
    const fsync = this.#ctx.policy !== 'never';
    seg.fd = replaceFileOpen(this.io, seg.file, fileHeader(firstOffset, 0), fsync);
    try {
      if (fsync) fsyncDirSync(this.io, this.#dir);
      this.#writeList(Math.max(firstOffset, this.#nextOffset), id);
    } catch (error) {
      this.io.closeSync(seg.fd);
      throw error;
    }
    return seg;
  }

  /** Grows the write buffer while a burst fits in MAX_BATCH, else writes it out first. */
  #makeRoom(frameLength: number): void {
    if (this.#batchLen + frameLength > MAX_BATCH && this.#batchLen > 0) this.#writeOrFail();
    const need = this.#batchLen + frameLength;
    if (need <= this.batch.length) return;
    let size = this.batch.length;
    while (size < need) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    // `need` also covers a record the codec encoded in place after the frames: keep it.
    this.#batchBuffer.copy(grown, 0, 0, Math.min(this.#batchBuffer.length, need));
    this.#batchBuffer = grown;
    this.batch = plainView(grown);
    this.batchFields = fieldsOf(this.batch);
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

  /** Ends the write buffer's open chunk at `end` (the end of its last frame). */
  #endChunk(end: number): void {
    endChunk(this.batch, this.#chunkStart, this.#chunkLast, end);
    this.#chunkStart = end;
  }

  #writeBatch(): void {
    const length = this.#batchLen;
    if (length === 0) return;
    const seg = this.#active;
    // Every write ends a chunk, so a torn write never cuts into confirmed records.
    if (this.#chunkStart < length) this.#endChunk(length);
    // A failed write leaves the buffer as it was, its chunk ended, to be written again whole at
    // the same place: what part of it reached the file is overwritten with the same bytes.
    writeFully(this.io, seg.fd, this.#batchBuffer, 0, length, seg.fileSize);
    this.#chunkStart = 0;
    if (seg.verifiedTo === seg.fileSize) seg.verifiedTo += length;
    seg.fileSize += length;
    seg.unsynced = this.#ctx.policy !== 'never';
    this.#batchLen = 0;
    if (this.#ctx.policy === 'never') this.#durableEnd = this.#nextOffset;
  }

  #flush(): void {
    this.#writeBatch();
    if (this.#unindexed.length > 0) {
      for (const seg of this.#unindexed) if (!seg.dropped) writeSegmentIndex(this.io, seg);
      this.#unindexed = [];
    }
    this.#releaseDeletions();
    if (this.#staleMarks > STALE_MARKS_REWRITE && this.#staleMarks > this.#marks.entries / 2) {
      this.#rewriteMarks();
    }
  }

  /**
   * One fsync round, in two steps: the records written so far, then the deletions they allowed
   * (marks written and unlinks done once the records before them are durable), so a round's
   * waiters also find its deletions durable.
   */
  #fsync(done: (error: Error | null) => void): void {
    const covers = this.#nextOffset;
    allDone(this.#syncJobs(true), (error) => {
      if (error) {
        done(error);
        return;
      }
      if (covers > this.#durableEnd) this.#durableEnd = covers;
      try {
        // Not once destroyed (or failed): then nothing more is written.
        if (!this.#scheduler.failure) this.#releaseDeletions();
      } catch (releaseError) {
        done(releaseError as Error);
        return;
      }
      allDone(this.#syncJobs(false), done);
    });
  }

  /** Fsyncs of what was written and not yet fsynced: the segments only with `segments`. */
  #syncJobs(segments: boolean): Job[] {
    const jobs: Job[] = [];
    for (const seg of segments ? this.#segs : []) {
      if (!seg.unsynced || seg.fd < 0) continue;
      seg.unsynced = false;
      seg.pinned++;
      const fd = seg.fd;
      jobs.push((cb) =>
        this.io.fsync(fd, (error) => {
          seg.pinned--;
          if (seg.closeWhenUnpinned && seg.pinned === 0) this.#closeFd(seg);
          cb(error);
        }),
      );
    }
    if (this.#marks.unsynced) jobs.push((cb) => this.#marks.fsync(cb));
    if (this.#dirUnsynced) {
      this.#dirUnsynced = false;
      jobs.push((cb) => fsyncDir(this.io, this.#dir, cb));
    }
    return jobs;
  }

  /**
   * Puts on disk the deletions whose records before them are durable: their marks are written,
   * the files of their dropped segments unlinked, and held compactions run. If some still
   * wait, a round is asked for.
   */
  #releaseDeletions(): void {
    const end = this.#durableEnd;
    this.#marks.flush(end);
    const held = this.#heldUnlinks;
    let released = 0;
    while (released < held.length && held[released]!.need <= end) released++;
    if (released > 0) this.#removeFiles(held.splice(0, released).map((h) => h.seg));
    if (this.#toCompact.size > 0) this.#queueCompaction();
    if ((this.#marks.pending > 0 || held.length > 0) && this.#ctx.policy !== 'never') {
      this.#scheduler.request();
    }
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
    this.#open.add(old);
    const seg = this.#create(old.id + 1, firstOffset);
    // Segments of one log hold similar records: skip the tables' doubling from empty.
    seg.reserve(old.slots);
    this.#segs.push(seg);
    this.#active = seg;
    this.#reclaim(old);
    return seg;
  }

  /** Drops a sealed segment with no live record; queues a mostly deleted one for compaction. */
  #reclaim(seg: Segment): void {
    if (seg.live === 0) this.#drop(seg, seg.deletionNeed);
    else if (
      seg.slots >= COMPACT_MIN_RECORDS &&
      seg.deletedCount - (seg.span - seg.slots) > seg.slots / 2
    ) {
      this.#toCompact.add(seg);
      this.#queueCompaction();
    }
  }

  #queueCompaction(): void {
    if (this.#compactQueued) return;
    this.#compactQueued = true;
    setImmediate(() => this.#compactQueuedSegments());
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
    this.#staleMarks += seg.deletedCount - (seg.span - seg.slots);
    if (need <= this.#durableEnd) {
      this.#unlink(seg);
      return;
    }
    this.#forget(seg);
    this.#heldUnlinks.push({ seg, need });
    if (this.#ctx.policy !== 'never') this.#scheduler.request();
  }

  #unlink(seg: Segment): void {
    this.#forget(seg);
    this.#removeFiles([seg]);
  }

  /** Takes a segment out of use: cursors move on, its descriptor closes. */
  #forget(seg: Segment): void {
    seg.dropped = true;
    this.epoch++;
    this.#toCompact.delete(seg);
    this.#closeFd(seg);
  }

  /** Unlinks the files of segments already taken out of the log, once the list no longer names them. */
  #removeFiles(segs: readonly Segment[]): void {
    this.#writeList(this.#nextOffset);
    for (const seg of segs) {
      for (const file of seg.indexed ? [seg.file, seg.indexFile] : [seg.file])
        removeIfThere(this.io, file);
    }
    this.#dirUnsynced = true;
  }

  /**
   * Replaces the segment list: the segments retained and those whose files wait to be unlinked,
   * plus `extraId` (a segment about to be created), and a bound past `from`, the next offset
   * to hand out.
   */
  #writeList(from: number, extraId?: number): void {
    const ids = [...this.#heldUnlinks.map((held) => held.seg.id), ...this.#segs.map((s) => s.id)];
    if (extraId !== undefined) ids.push(extraId);
    ids.sort((a, b) => a - b);
    const offsetsBelow = Math.max(this.#offsetsBelow, from + OFFSET_LEASE);
    const file = path.join(this.#dir, LIST_FILE);
    writeSegmentList(this.io, file, { ids, offsetsBelow }, this.#ctx.policy !== 'never');
    this.#offsetsBelow = offsetsBelow;
    this.#dirUnsynced = true;
  }

  #closeFd(seg: Segment): void {
    this.#open.delete(seg);
    if (seg.fd < 0) return;
    if (seg.pinned > 0) {
      seg.closeWhenUnpinned = true;
      return;
    }
    this.io.closeSync(seg.fd);
    seg.fd = -1;
    seg.closeWhenUnpinned = false;
  }

  #releaseFiles(): void {
    for (const seg of this.#segs) this.#closeFd(seg);
    for (const seg of this.#open) this.#closeFd(seg);
    this.#marks?.close();
  }

  #rewriteMarks(): void {
    const offsets: number[] = [];
    for (const seg of this.#segs) {
      for (let slot = 0; slot < seg.slots; slot++) {
        if (seg.isDeletedSlot(slot)) offsets.push(seg.firstOffset + seg.deltaOf(slot));
      }
    }
    this.#marks.rewrite(offsets, this.#ctx.policy !== 'never');
    this.#staleMarks = 0;
    this.#dirUnsynced = true;
  }

  #compactQueuedSegments(): void {
    this.#compactQueued = false;
    if (this.#closed) return;
    for (const seg of this.#toCompact) {
      // Retried on its next ack, or once the records before its deletions are durable.
      if (seg.pinned > 0 || seg.unsynced || seg.deletionNeed > this.#durableEnd) continue;
      this.#toCompact.delete(seg);
      try {
        this.#compact(seg);
      } catch (error) {
        // Later syncs reject with it; an idle log would keep it to itself until then.
        if (errorChannel.hasSubscribers) errorChannel.publish({ error, source: 'compaction' });
        this.#scheduler.fail(error as Error);
        return;
      }
    }
  }

  /**
   * Rewrites a sealed segment without its deleted records, in the current layout. Frames are
   * copied whole (they carry their offsets) into new checksum chunks; the new file replaces the
   * old one by rename, then its index follows. A crash in between leaves a new file with a stale
   * index, which is detected and rescanned.
   */
  #compact(seg: Segment): void {
    const size = seg.fileSize;
    const input = Buffer.allocUnsafe(size);
    readFully(this.io, this.fdOf(seg), input, 0, size, 0);
    const inputFields = fieldsOf(input);
    // Surviving frames of a layout 1 segment each grow by a chunk checksum.
    const output = Buffer.allocUnsafe(size + CHUNK_CHECKSUM * seg.slots);
    fileHeader(seg.firstOffset, seg.generation + 1).copy(output, 0);
    const copy = new Segment(this.#dir, seg.id, seg.firstOffset, seg.generation + 1);
    let out = FILE_HEADER;
    let chunkStart = out;
    let last = out;
    let slot = 0;
    const removed = seg.slots - (seg.span - seg.deletedCount);
    for (let pos = FILE_HEADER; pos < size; ) {
      const run = checkRun(seg.layout, input, pos, size, size);
      if (run < 0) throw corruptRecord(seg.file, pos);
      for (const runEnd = pos + run; pos < runEnd; slot++) {
        if (!seg.isDeletedSlot(slot)) {
          // Chunks are ended anew, by the writer's rule.
          if (chunkStart < out && copy.startsSpan(out)) {
            endChunk(output, chunkStart, last, out);
            chunkStart = out;
          }
          const length = copyFrame(seg.layout, input, pos, output, out);
          copy.add(
            frameDelta(input, pos),
            seg.lens[slot]!,
            frameTimestamp(inputFields, pos),
            out,
            length,
          );
          last = out;
          out += length;
        }
        pos += FRAME_HEADER + input.readUInt32LE(pos);
      }
    }
    if (chunkStart < out) endChunk(output, chunkStart, last, out);
    copy.fileSize = copy.size = copy.verifiedTo = out;
    const tmp = `${seg.file}.tmp`;
    const fd = this.io.openSync(tmp, 'w');
    try {
      writeFully(this.io, fd, output, 0, out, 0);
      if (this.#ctx.policy !== 'never') this.io.fsyncSync(fd);
    } finally {
      this.io.closeSync(fd);
    }
    this.#closeFd(seg);
    this.io.renameSync(tmp, seg.file);
    seg.adopt(copy);
    this.epoch++;
    seg.trim();
    writeSegmentIndex(this.io, seg);
    this.#staleMarks += removed;
    this.#dirUnsynced = true;
  }
}
