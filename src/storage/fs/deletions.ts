/**
 * The order in which a log's deletions reach the disk: only after the records appended before
 * them (see log.ts). Tracks how far records are durable, runs the two-step fsync round, puts
 * held deletions on disk once they may go, and rewrites the marks file once enough of its marks
 * are stale.
 */
import type { SyncScheduler } from './durability.js';
import { allDone, type FsyncJob } from './io.js';
import type { MarksFile } from './marks.js';
import type { Segment } from './segment.js';
import type { SegmentFiles } from './segment-files.js';

/** What the deletion order needs from its log. */
export interface DeletionsContext {
  readonly files: SegmentFiles;
  readonly marks: MarksFile;
  readonly scheduler: SyncScheduler;
  /** Whether the policy fsyncs (is not `never`). */
  readonly fsyncs: boolean;
  /** The log's next offset. */
  readonly nextOffset: () => number;
  /** The retained segments, oldest first. */
  readonly segs: () => readonly Segment[];
  /** Called once released deletions are on disk, before a round is asked for. */
  readonly released: () => void;
}

export class Deletions {
  /** Every record below this offset is durable per the policy (written, under `never`). */
  durableEnd: number;
  readonly #ctx: DeletionsContext;

  constructor(ctx: DeletionsContext, durableEnd: number) {
    this.#ctx = ctx;
    this.durableEnd = durableEnd;
  }

  /** Marks `offset` deleted once every record below `need` is durable. */
  mark(offset: number, need: number): void {
    const ctx = this.#ctx;
    ctx.marks.add(offset, need);
    ctx.scheduler.touch();
    // The records before it reach the disk with the next round; the log asks for one itself.
    if (need > this.durableEnd && ctx.fsyncs) ctx.scheduler.request();
  }

  /** Unlinks the files of dropped `seg` once every record below `need` is durable. */
  removeFiles(seg: Segment, need: number): void {
    const ctx = this.#ctx;
    if (need <= this.durableEnd) {
      ctx.files.remove([seg], ctx.nextOffset());
      return;
    }
    ctx.files.hold(seg, need);
    if (ctx.fsyncs) ctx.scheduler.request();
  }

  /** What a flush does for deletions: release those allowed, rewrite marks if worth it. */
  flush(): void {
    this.release();
    if (this.#ctx.marks.worthRewriting) this.#rewriteMarks();
  }

  /**
   * One fsync round, in two steps: the records written so far, then the deletions they allowed
   * (marks written and unlinks done once the records before them are durable), so a round's
   * waiters also find its deletions durable.
   */
  fsync(done: (error: Error | null) => void): void {
    const ctx = this.#ctx;
    const covers = ctx.nextOffset();
    allDone(this.#syncJobs(true), (error) => {
      if (error) {
        done(error);
        return;
      }
      if (covers > this.durableEnd) this.durableEnd = covers;
      try {
        // Not once destroyed (or failed): then nothing more is written.
        if (!ctx.scheduler.failure) this.release();
      } catch (releaseError) {
        done(releaseError as Error);
        return;
      }
      allDone(this.#syncJobs(false), done);
    });
  }

  /**
   * Puts on disk the deletions whose records before them are durable: their marks are written,
   * the files of their dropped segments unlinked, and held compactions run. If some still
   * wait, a round is asked for.
   */
  release(): void {
    const ctx = this.#ctx;
    const end = this.durableEnd;
    ctx.marks.flush(end);
    ctx.files.release(end, ctx.nextOffset());
    ctx.released();
    if ((ctx.marks.pending > 0 || ctx.files.holding) && ctx.fsyncs) {
      ctx.scheduler.request();
    }
  }

  /** Fsyncs of what was written and not yet fsynced: the segments only with `segments`. */
  #syncJobs(segments: boolean): FsyncJob[] {
    const ctx = this.#ctx;
    const jobs: FsyncJob[] = [];
    if (segments) ctx.files.addSegmentFsyncs(ctx.segs(), jobs);
    if (ctx.marks.unsynced) jobs.push((cb) => ctx.marks.fsync(cb));
    ctx.files.addDirFsync(jobs);
    return jobs;
  }

  #rewriteMarks(): void {
    const offsets: number[] = [];
    for (const seg of this.#ctx.segs()) {
      for (let slot = 0; slot < seg.slots; slot++) {
        if (seg.isDeletedSlot(slot)) offsets.push(seg.firstOffset + seg.deltaOf(slot));
      }
    }
    this.#ctx.marks.rewrite(offsets, this.#ctx.fsyncs);
    this.#ctx.files.dirUnsynced = true;
  }
}
