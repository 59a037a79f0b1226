/**
 * The segment files of one log's directory, apart from the records in them: their descriptors
 * (opened on demand, kept in the adapter's cache: see handles.ts), creating them, the
 * segment list that names them (`~segments`, see segment-list.ts) and unlinking them.
 *
 * A segment the log drops goes from memory at once, but its files are held, still listed, until
 * every record appended before the drop is durable (see `FsLog`): a crash must not keep the
 * drop and lose what was written before it.
 */
import path from 'node:path';
import { fileHeader } from './frame.js';
import type { FileHandle, Handles } from './handles.js';
import {
  type FsIo,
  type FsyncJob,
  fsyncDir,
  fsyncDirSync,
  replaceFileOpen,
  unlinkIfPresent,
} from './io.js';
import { Segment } from './segment.js';
import { LIST_FILE, writeSegmentList } from './segment-list.js';

/**
 * Offsets handed out per write of the segment list's bound (see `segment-list.ts`): a log that
 * lost its tail segment continues at most this far past the offsets it had handed out.
 */
const OFFSET_LEASE = 4096;

/** The ids of the segment files in `dir`, ascending; leftover `*.tmp` files are removed. */
export function listSegmentIds(io: FsIo, dir: string): number[] {
  const ids: number[] = [];
  for (const entry of io.readdirSync(dir)) {
    if (entry.endsWith('.tmp')) io.unlinkSync(path.join(dir, entry));
    else if (/^\d{10}\.seg$/.test(entry)) ids.push(Number(entry.slice(0, 10)));
  }
  return ids.sort((a, b) => a - b);
}

export class SegmentFiles {
  /** Every offset handed out is below this one, as the segment list on disk says. */
  offsetsBelow = 0;
  /** Entries of the directory changed since its last fsync. */
  dirUnsynced = false;

  readonly #io: FsIo;
  readonly #handles: Handles;
  readonly #dir: string;
  /** Whether a new segment list is fsynced before its rename (unless the policy is `never`). */
  readonly #fsync: boolean;
  /** The log's retained segments, oldest first. */
  readonly #retained: () => readonly Segment[];
  /** Segments dropped in memory whose files wait for the records before the drop. */
  #held: { seg: Segment; need: number }[] = [];

  constructor(handles: Handles, dir: string, fsync: boolean, retained: () => readonly Segment[]) {
    this.#io = handles.io;
    this.#handles = handles;
    this.#dir = dir;
    this.#fsync = fsync;
    this.#retained = retained;
  }

  /** An open descriptor of `seg`'s file. */
  fdOf(seg: Segment): number {
    return this.handleOf(seg).fd;
  }

  /** The handle of `seg`'s file. */
  handleOf(seg: Segment): FileHandle {
    seg.handle ??= this.#handles.file(seg.file, 'r+');
    return seg.handle;
  }

  /** Closes the descriptor of `seg` (once the fsyncs running on it end). */
  close(seg: Segment): void {
    seg.handle?.release();
  }

  /** Closes the descriptors of `segs`. */
  closeAll(segs: readonly Segment[]): void {
    for (const seg of segs) this.close(seg);
  }

  /**
   * Creates an empty segment file (atomically: written aside, then renamed) and makes it durable
   * (unless the policy is `never`), then lists it: a crash in between leaves a file past the
   * list's last, which holds no confirmed record, and the list never names a file a power cut
   * may lose. `nextOffset` is the log's next offset to hand out.
   */
  create(id: number, firstOffset: number, nextOffset: number): Segment {
    const seg = new Segment(this.#dir, id, firstOffset, 0);
    const handle = this.handleOf(seg);
    handle.adopt(replaceFileOpen(this.#io, seg.file, fileHeader(firstOffset, 0), this.#fsync));
    try {
      if (this.#fsync) fsyncDirSync(this.#io, this.#dir);
      else this.dirUnsynced = true;
      this.writeList(Math.max(firstOffset, nextOffset), id);
    } catch (error) {
      handle.release();
      throw error;
    }
    return seg;
  }

  /**
   * Replaces the segment list: the segments retained and those whose files wait to be unlinked,
   * plus `extraId` (a segment about to be created), and a bound past `from`, the next offset
   * to hand out.
   */
  writeList(from: number, extraId?: number): void {
    const ids = [...this.#held.map((held) => held.seg.id), ...this.#retained().map((s) => s.id)];
    if (extraId !== undefined) ids.push(extraId);
    ids.sort((a, b) => a - b);
    const offsetsBelow = Math.max(this.offsetsBelow, from + OFFSET_LEASE);
    const file = path.join(this.#dir, LIST_FILE);
    writeSegmentList(this.#io, file, { ids, offsetsBelow }, this.#fsync);
    this.offsetsBelow = offsetsBelow;
    this.dirUnsynced = true;
  }

  /** Holds the files of a dropped segment until every record below `need` is durable. */
  hold(seg: Segment, need: number): void {
    this.#held.push({ seg, need });
  }

  /** Whether files of dropped segments are held. */
  get holding(): boolean {
    return this.#held.length > 0;
  }

  /** Unlinks the held files whose records before them are now durable (below `durableEnd`). */
  release(durableEnd: number, nextOffset: number): void {
    const held = this.#held;
    let released = 0;
    while (released < held.length && held[released]!.need <= durableEnd) released++;
    if (released > 0)
      this.remove(
        held.splice(0, released).map((h) => h.seg),
        nextOffset,
      );
  }

  /** Stops holding the files of dropped segments and returns those segments (to remove now). */
  takeHeld(): Segment[] {
    const segs = this.#held.map((held) => held.seg);
    this.#held = [];
    return segs;
  }

  /** Unlinks the files of segments already taken out of the log, once the list no longer names them. */
  remove(segs: readonly Segment[], nextOffset: number): void {
    this.writeList(nextOffset);
    for (const seg of segs) {
      for (const file of seg.indexed ? [seg.file, seg.indexFile] : [seg.file])
        unlinkIfPresent(this.#io, file);
    }
    this.dirUnsynced = true;
  }

  /** Adds fsyncs of the segments of `segs` written since their last one to `jobs`. */
  addSegmentFsyncs(segs: readonly Segment[], jobs: FsyncJob[]): void {
    for (const seg of segs) {
      const handle = seg.handle;
      if (handle?.unsynced) jobs.push((cb) => handle.fsync(cb));
    }
  }

  /** Adds an fsync of the directory to `jobs` if its entries changed since the last one. */
  addDirFsync(jobs: FsyncJob[]): void {
    if (!this.dirUnsynced) return;
    this.dirUnsynced = false;
    jobs.push((cb) => fsyncDir(this.#io, this.#dir, cb));
  }
}
