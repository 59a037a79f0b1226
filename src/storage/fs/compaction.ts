/**
 * Compaction: a sealed segment mostly deleted is rewritten without its deleted records, in the
 * current layout (FORMAT.md, "Segment files"). Frames are copied whole (they carry their
 * offsets) into new checksum chunks under a header of the next generation; the new file
 * replaces the old one by rename, then its index follows. A crash in between leaves a new file
 * with a stale index, which is detected and rescanned.
 */
import path from 'node:path';
import { errorChannel } from '../../diagnostics.js';
import {
  CHUNK_CHECKSUM,
  checkRun,
  copyFrame,
  endChunk,
  FILE_HEADER,
  FRAME_HEADER,
  fieldsOf,
  fileHeader,
  frameDelta,
  frameTimestamp,
} from './frame.js';
import { type FsIo, readFully, writeFully } from './io.js';
import { corruptRecord } from './recovery.js';
import { Segment } from './segment.js';
import type { SegmentFiles } from './segment-files.js';
import { writeSegmentIndex } from './segment-index.js';

/** Records a sealed segment needs before compaction is worth a rewrite. */
const COMPACT_MIN_RECORDS = 64;

/** Whether a sealed segment holds enough deleted records for a rewrite to pay. */
export function worthCompacting(seg: Segment): boolean {
  return (
    seg.slots >= COMPACT_MIN_RECORDS && seg.deletedCount - (seg.span - seg.slots) > seg.slots / 2
  );
}

/**
 * Rewrites `seg` without its deleted records: the copy goes to `<file>.tmp`, fsynced when
 * `fsync`, then the segment's descriptor is closed, the copy renamed over it and its tables
 * adopted. Returns how many records it removed. The caller writes the new index.
 */
export function compactSegment(
  io: FsIo,
  files: SegmentFiles,
  seg: Segment,
  fsync: boolean,
): number {
  const size = seg.fileSize;
  const input = Buffer.allocUnsafe(size);
  readFully(io, files.fdOf(seg), input, 0, size, 0);
  const inputFields = fieldsOf(input);
  // Surviving frames of a layout 1 segment each grow by a chunk checksum.
  const output = Buffer.allocUnsafe(size + CHUNK_CHECKSUM * seg.slots);
  fileHeader(seg.firstOffset, seg.generation + 1).copy(output, 0);
  const copy = new Segment(path.dirname(seg.file), seg.id, seg.firstOffset, seg.generation + 1);
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
  const tmpFd = io.openSync(tmp, 'w');
  try {
    writeFully(io, tmpFd, output, 0, out, 0);
    if (fsync) io.fsyncSync(tmpFd);
  } finally {
    io.closeSync(tmpFd);
  }
  files.close(seg);
  io.renameSync(tmp, seg.file);
  seg.adopt(copy);
  return removed;
}

/** What a log's compactor needs from it. */
export interface CompactorContext {
  readonly io: FsIo;
  readonly files: SegmentFiles;
  /** Whether the policy fsyncs (is not `never`). */
  readonly fsync: boolean;
  readonly closed: () => boolean;
  /** Every record below this offset is durable. */
  readonly durableEnd: () => number;
  /** Called once a segment's file is replaced, before its tables are trimmed. */
  readonly replaced: () => void;
  /** Called once the new index is written, with how many records the rewrite removed. */
  readonly compacted: (removed: number) => void;
  /** Fails the log with a compaction's error. */
  readonly fail: (error: Error) => void;
}

/**
 * A log's queue of segments worth compacting, run on a later turn (one `setImmediate` for any
 * number of queued segments).
 */
export class Compactor {
  readonly #ctx: CompactorContext;
  readonly #queue = new Set<Segment>();
  #scheduled = false;

  constructor(ctx: CompactorContext) {
    this.#ctx = ctx;
  }

  /** Queues `seg`, a sealed segment worth compacting. */
  add(seg: Segment): void {
    this.#queue.add(seg);
    this.#schedule();
  }

  /** Forgets `seg`, which is dropped. */
  delete(seg: Segment): void {
    this.#queue.delete(seg);
  }

  /** Runs what waits in the queue on a later turn (after deletions became durable). */
  retry(): void {
    if (this.#queue.size > 0) this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#run());
  }

  #run(): void {
    this.#scheduled = false;
    const ctx = this.#ctx;
    if (ctx.closed()) return;
    for (const seg of this.#queue) {
      // Retried on its next ack, or once the records before its deletions are durable.
      const handle = seg.handle;
      if (handle?.pinned || handle?.unsynced || seg.deletionNeed > ctx.durableEnd()) continue;
      this.#queue.delete(seg);
      try {
        const removed = compactSegment(ctx.io, ctx.files, seg, ctx.fsync);
        ctx.replaced();
        seg.trim();
        writeSegmentIndex(ctx.io, seg);
        ctx.compacted(removed);
        ctx.files.dirUnsynced = true;
      } catch (error) {
        // Later syncs reject with it; an idle log would keep it to itself until then.
        if (errorChannel.hasSubscribers) errorChannel.publish({ error, source: 'compaction' });
        ctx.fail(error as Error);
        return;
      }
    }
  }
}
