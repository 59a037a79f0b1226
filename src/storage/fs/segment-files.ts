/**
 * The segment files of one log's directory, apart from the records in them: their descriptors
 * (the active segment's, and a few sealed ones kept open for reading), creating them, the
 * segment list that names them (`~segments`, see segment-list.ts) and unlinking them.
 *
 * A segment the log drops goes from memory at once, but its files are held, still listed, until
 * every record appended before the drop is durable (see `FsLog`): a crash must not keep the
 * drop and lose what was written before it.
 */
import path from 'node:path';
import { fileHeader } from './frame.js';
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

/** Sealed segments kept open for reading per log. */
const MAX_OPEN_SEGMENTS = 8;

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
  readonly #dir: string;
  /** Whether a new segment list is fsynced before its rename (unless the policy is `never`). */
  readonly #fsync: boolean;
  /** The log's retained segments, oldest first. */
  readonly #retained: () => readonly Segment[];
  /** Sealed segments with an open descriptor, oldest first. */
  readonly #open = new Set<Segment>();
  /** Segments dropped in memory whose files wait for the records before the drop. */
  #held: { seg: Segment; need: number }[] = [];

  constructor(io: FsIo, dir: string, fsync: boolean, retained: () => readonly Segment[]) {
    this.#io = io;
    this.#dir = dir;
    this.#fsync = fsync;
    this.#retained = retained;
  }

  /** An open descriptor for reading `seg` (closing the oldest unused one past MAX_OPEN_SEGMENTS). */
  fdOf(seg: Segment): number {
    if (seg.fd >= 0) return seg.fd;
    seg.fd = this.#io.openSync(seg.file, 'r');
    this.#open.add(seg);
    if (this.#open.size > MAX_OPEN_SEGMENTS) {
      for (const old of this.#open) {
        if (old === seg || old.pinned > 0 || old.unsynced) continue;
        this.close(old);
        break;
      }
    }
    return seg.fd;
  }

  /** `seg`, the active segment until now, is sealed: its descriptor is kept like a reader's. */
  sealed(seg: Segment): void {
    this.#open.add(seg);
  }

  /** Closes the descriptor of `seg`, once the fsyncs running on it end. */
  close(seg: Segment): void {
    this.#open.delete(seg);
    if (seg.fd < 0) return;
    if (seg.pinned > 0) {
      seg.closeWhenUnpinned = true;
      return;
    }
    this.#io.closeSync(seg.fd);
    seg.fd = -1;
    seg.closeWhenUnpinned = false;
  }

  /** Closes every descriptor: those of `segs` and of the sealed segments kept open. */
  closeAll(segs: readonly Segment[]): void {
    for (const seg of segs) this.close(seg);
    for (const seg of this.#open) this.close(seg);
  }

  /**
   * Creates an empty segment file (atomically: written aside, then renamed) and makes it durable
   * (unless the policy is `never`), then lists it: a crash in between leaves a file past the
   * list's last, which holds no confirmed record, and the list never names a file a power cut
   * may lose. `nextOffset` is the log's next offset to hand out.
   */
  create(id: number, firstOffset: number, nextOffset: number): Segment {
    const seg = new Segment(this.#dir, id, firstOffset, 0);
    seg.fd = replaceFileOpen(this.#io, seg.file, fileHeader(firstOffset, 0), this.#fsync);
    try {
      if (this.#fsync) fsyncDirSync(this.#io, this.#dir);
      else this.dirUnsynced = true;
      this.writeList(Math.max(firstOffset, nextOffset), id);
    } catch (error) {
      this.#io.closeSync(seg.fd);
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
      if (!seg.unsynced || seg.fd < 0) continue;
      seg.unsynced = false;
      seg.pinned++;
      const fd = seg.fd;
      jobs.push((cb) =>
        this.#io.fsync(fd, (error) => {
          seg.pinned--;
          if (seg.closeWhenUnpinned && seg.pinned === 0) this.close(seg);
          cb(error);
        }),
      );
    }
  }

  /** Adds an fsync of the directory to `jobs` if its entries changed since the last one. */
  addDirFsync(jobs: FsyncJob[]): void {
    if (!this.dirUnsynced) return;
    this.dirUnsynced = false;
    jobs.push((cb) => fsyncDir(this.#io, this.#dir, cb));
  }
}
