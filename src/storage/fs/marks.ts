/**
 * The deletion marks of one log (`~deleted`, layout in FORMAT.md): an append-only file of acked
 * offsets, written in the same batches as the records. Each batch is one checksummed frame, so
 * a torn last batch is recognised and dropped (those acks were never confirmed by a sync).
 * Marks of reclaimed or compacted records go stale; the log rewrites the file when stale ones
 * outnumber the rest (see {@link MarksFile.worthRewriting}).
 *
 * A mark is held in memory until every record appended before it was marked is durable (the
 * log says when): a deletion on disk must never outlive what replaced the record, such as a
 * last-value queue's newer value still waiting for its fsync.
 */
import { crc32 } from './checksum.js';
import { LITTLE_ENDIAN } from './frame.js';
import type { FileHandle, Handles } from './handles.js';
import { type FsIo, readFile, replaceFileOpen, writeFully } from './io.js';

export const MARKS_FILE = '~deleted';

const HEAD = 8;

/**
 * Stale marks that make the marks file worth rewriting (if they also outnumber live ones). A
 * rewrite fsyncs the new file on the calling thread, and a last-value log makes a segment's
 * worth of marks stale every few thousand acks: 16 Ki (128 KiB of file) keeps that to one
 * rewrite per ~16 k acks.
 */
const STALE_MARKS_REWRITE = 16 * 1024;

/**
 * Passes every mark of the marks file `buf` to `apply`, up to the first batch that is cut short
 * or fails its checksum (a torn write, cut on open); returns where the valid batches end.
 */
export function readMarks(buf: Buffer, apply: (offset: number) => void): number {
  let at = 0;
  while (at + HEAD <= buf.length) {
    const count = buf.readUInt32LE(at);
    const end = at + HEAD + count * 8;
    if (end > buf.length) break;
    const body = buf.subarray(at + HEAD, end);
    if (crc32(body) !== buf.readUInt32LE(at + 4)) break;
    for (let i = 0; i < count; i++) apply(body.readDoubleLE(i * 8));
    at = end;
  }
  return at;
}

export class MarksFile {
  readonly #io: FsIo;
  readonly #file: string;
  readonly #handle: FileHandle;
  #size: number;
  #pending = new Float64Array(256);
  /**
   * Per pending mark, the offset every record below which must be durable first: the log's next
   * offset when it was marked, or the record's own end under independent deletions. Marks are
   * written in order, so one waits for those before it too.
   */
  #needs = new Float64Array(256);
  #pendingCount = 0;
  /** Marks in the file. */
  entries = 0;
  /** Marks in the file of records no longer stored (the log counts those it drops or compacts). */
  stale = 0;

  /**
   * Opens (creating) the marks file, passing every stored mark to `apply`, which says whether it
   * marked a record still stored (else the mark is stale).
   */
  constructor(handles: Handles, file: string, apply: (offset: number) => boolean) {
    const io = handles.io;
    this.#io = io;
    this.#file = file;
    const buf = readFile(io, file) ?? Buffer.alloc(0);
    const at = readMarks(buf, (offset) => {
      if (!apply(offset)) this.stale++;
      this.entries++;
    });
    this.#handle = handles.file(file, 'r+');
    if (!io.existsSync(file)) this.#handle.adopt(io.openSync(file, 'w+'));
    // A torn last batch: cut it so later batches are not hidden behind it.
    else if (at !== buf.length) io.ftruncateSync(this.#handle.fd, at);
    this.#size = at;
  }

  /** Written since the last fsync. */
  get unsynced(): boolean {
    return this.#handle.unsynced;
  }

  /** Fsyncs the file. */
  fsync(done: (error: Error | null) => void): void {
    this.#handle.fsync(done);
  }

  /** Marks not written yet (held until the records before them are durable). */
  get pending(): number {
    return this.#pendingCount;
  }

  /**
   * Adds a mark of `offset`, made when the log's next offset was `need`: it is written once
   * every record below `need` is durable.
   */
  add(offset: number, need: number): void {
    if (this.#pendingCount === this.#pending.length) {
      const size = this.#pending.length * 2;
      const grown = new Float64Array(size);
      grown.set(this.#pending);
      this.#pending = grown;
      const needs = new Float64Array(size);
      needs.set(this.#needs);
      this.#needs = needs;
    }
    this.#needs[this.#pendingCount] = need;
    this.#pending[this.#pendingCount++] = offset;
  }

  /**
   * Writes, as one frame, the pending marks whose records before them are durable: those made
   * while the log's next offset was at most `durableEnd`. Returns whether it wrote any.
   */
  flush(durableEnd: number): boolean {
    const needs = this.#needs;
    let count = 0;
    while (count < this.#pendingCount && needs[count]! <= durableEnd) count++;
    if (count === 0) return false;
    const frame = Buffer.allocUnsafe(HEAD + count * 8);
    frame.set(new Uint8Array(this.#pending.buffer, 0, count * 8), HEAD);
    if (!LITTLE_ENDIAN) frame.subarray(HEAD).swap64();
    frame.writeUInt32LE(count, 0);
    frame.writeUInt32LE(crc32(frame.subarray(HEAD)), 4);
    writeFully(this.#io, this.#handle.fd, frame, 0, frame.length, this.#size);
    this.#size += frame.length;
    this.#pending.copyWithin(0, count, this.#pendingCount);
    needs.copyWithin(0, count, this.#pendingCount);
    this.#pendingCount -= count;
    this.entries += count;
    this.#handle.wrote();
    return true;
  }

  /** Whether stale marks are enough of the file for a rewrite to pay. */
  get worthRewriting(): boolean {
    return this.stale > STALE_MARKS_REWRITE && this.stale > this.entries / 2;
  }

  /** Empties the file, pending marks too: every record is gone. */
  clear(fsync: boolean): void {
    this.stale = 0;
    this.#pendingCount = 0;
    this.rewrite([], fsync);
  }

  /**
   * Replaces the file with `offsets` (atomically), less the pending marks: those stay pending,
   * so the rewrite puts no deletion on disk before its time.
   */
  rewrite(allOffsets: readonly number[], fsync: boolean): void {
    let offsets = allOffsets;
    if (this.#pendingCount > 0) {
      const held = new Set(this.#pending.subarray(0, this.#pendingCount));
      offsets = allOffsets.filter((offset) => !held.has(offset));
    }
    const frame = Buffer.allocUnsafe(HEAD + offsets.length * 8);
    for (let i = 0; i < offsets.length; i++) frame.writeDoubleLE(offsets[i]!, HEAD + i * 8);
    frame.writeUInt32LE(offsets.length, 0);
    frame.writeUInt32LE(crc32(frame.subarray(HEAD)), 4);
    const data = offsets.length === 0 ? frame.subarray(0, 0) : frame;
    this.#handle.adopt(replaceFileOpen(this.#io, this.#file, data, fsync));
    this.#size = data.length;
    this.entries = offsets.length;
    this.stale = 0;
  }

  close(): void {
    this.#handle.release();
  }
}
