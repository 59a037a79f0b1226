import {
  type CompiledStreamFilter,
  type Headers,
  mayMatch,
  type SegmentSummary,
  SegmentSummaryBuilder,
} from '../../filters/index.js';
import type { JsonValue, MetaStore } from '../../storage/types.js';

/** Messages per summarized block. Blocks are the stream's own chunks, fixed by offset. */
export const SUMMARY_BLOCK = 16_384;

const KEY_PREFIX = 'stream.summary.';

/** Index of the block holding `offset` (offsets start at 1). */
function blockOf(offset: number): number {
  return Math.floor((offset - 1) / SUMMARY_BLOCK);
}

/** First offset of block `block`. */
function blockStart(block: number): number {
  return block * SUMMARY_BLOCK + 1;
}

/**
 * Filter summaries of the stream in blocks of {@link SUMMARY_BLOCK} offsets, so that a filtered
 * consumer replaying history skips whole blocks that cannot hold a match instead of reading
 * every message. Closed blocks are persisted in the stream's metadata (one small entry each);
 * the open block is rebuilt from the log on open.
 */
export class FilterSummaries {
  readonly #meta: MetaStore;
  readonly #closed = new Map<number, SegmentSummary>();
  #builder: SegmentSummaryBuilder | undefined;
  #block: number;
  /** Next offset to summarize. */
  #next: number;

  /**
   * @param firstOffset the oldest retained offset.
   * @param nextOffset the log's next offset: a persisted block reaching it is dropped, as after a
   *   crash that cut the log's tail its offsets will hold other messages.
   */
  constructor(meta: MetaStore, firstOffset: number, nextOffset: number) {
    this.#meta = meta;
    let resumeBlock = blockOf(firstOffset);
    for (const [key, value] of meta.entries(KEY_PREFIX)) {
      const block = Number(key.slice(KEY_PREFIX.length));
      if (blockStart(block + 1) > nextOffset) {
        meta.delete(key);
        continue;
      }
      this.#closed.set(block, value as unknown as SegmentSummary);
      resumeBlock = Math.max(resumeBlock, block + 1);
    }
    this.#block = resumeBlock;
    this.#next = Math.max(blockStart(resumeBlock), firstOffset);
  }

  /** Next offset `add` expects. */
  get next(): number {
    return this.#next;
  }

  /** Summarizes the message at `offset`, which must be `next` (or later, after retention). */
  add(offset: number, headers: Headers | undefined): void {
    const block = blockOf(offset);
    if (block !== this.#block || !this.#builder) {
      this.#closeOpenBlock(block);
      this.#block = block;
      this.#builder = new SegmentSummaryBuilder();
    }
    this.#builder.add(headers);
    this.#next = offset + 1;
    if (this.#next === blockStart(block + 1)) this.#closeOpenBlock(block + 1);
  }

  /**
   * The first offset at or after `position` that may hold a message the filter matches, skipping
   * closed blocks whose summary rules it out.
   */
  skip(filter: CompiledStreamFilter, position: number): number {
    let block = blockOf(position);
    for (;;) {
      const summary = this.#closed.get(block);
      if (summary === undefined || mayMatch(filter, summary)) return position;
      block++;
      position = blockStart(block);
    }
  }

  /** First offset of the block after the one holding `offset`: where the next check is due. */
  nextBoundary(offset: number): number {
    return blockStart(blockOf(offset) + 1);
  }

  /** Forgets the summaries of blocks that lie wholly before `firstOffset`. */
  dropBefore(firstOffset: number): void {
    const first = blockOf(firstOffset);
    for (const block of this.#closed.keys()) {
      if (block < first) {
        this.#closed.delete(block);
        this.#meta.delete(KEY_PREFIX + block);
      }
    }
    if (this.#next < firstOffset) this.#next = firstOffset;
  }

  #closeOpenBlock(nextBlock: number): void {
    const builder = this.#builder;
    if (builder) {
      const summary = builder.toJSON();
      this.#closed.set(this.#block, summary);
      this.#meta.set(KEY_PREFIX + this.#block, summary as unknown as JsonValue);
    }
    this.#builder = undefined;
    this.#block = nextBlock;
  }
}
