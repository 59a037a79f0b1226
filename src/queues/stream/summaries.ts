import {
  type CompiledStreamFilter,
  FILTER_VALUE_HEADER,
  filterValueKey,
  type Headers,
  mayMatch,
  passesValueGate,
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

/** Id of a message without filter values in {@link BlockKeys}. */
const NO_KEY = 0;
/** Id of a key the block's dictionary had no room for: such a message is always read. */
const UNKNOWN_KEY = 255;
/** Most characters of the keys one block's dictionary holds. */
const MAX_KEY_CHARS = 4096;
/**
 * Most blocks holding per-offset keys. A block where a message carries a filter value costs 1
 * byte per message plus at most 8 KiB of key text, so the newest 1024 blocks (16 M messages)
 * cost at most about 24 MiB. Older blocks are summary-only, as are closed blocks after a reopen
 * (the keys are not persisted): their messages are read, not jumped over.
 */
const MAX_KEY_BLOCKS = 1024;
/** Most per-offset keys one `skip` looks at before it lets the consumer read on. */
const SCAN_LIMIT = 4 * SUMMARY_BLOCK;

/**
 * Per offset of one block, the id of the message's filter-value key (see `filterValueKey`):
 * {@link NO_KEY}, {@link UNKNOWN_KEY}, or 1 + its index in `keys`. A filter with a `valueGate`
 * finds the messages it may match here without reading any message.
 */
export interface BlockKeys {
  /** Allocated with the block's first filter-value header: until then every id is NO_KEY. */
  ids: Uint8Array | undefined;
  readonly keys: string[];
  /** Whether some id is UNKNOWN_KEY. */
  overflow: boolean;
}

/**
 * A consumer's filter with what `FilterSummaries.skip` remembers for it: its gate's verdict on
 * the keys of the block it last searched.
 */
export class FilterScan {
  readonly filter: CompiledStreamFilter;
  /** Where the next `skip` is due: the messages before it are read and filtered one by one. */
  until = 0;
  /**
   * Messages before this (from where the last `skip` led) match for sure, without reading their
   * headers: their keys pass an exact gate.
   */
  sureUntil = 0;
  /** The last block whose summary may hold a match: asked once, not once per candidate. */
  mayBlock = -1;
  /**
   * The one id of the last `verdictsFor` block the gate lets through (-1 for none, or several):
   * then its messages are found with `indexOf`, at native speed however cold the code.
   */
  single = -1;
  /** Per key id of `#keys` (of block `#block`): 1 when the gate lets it through, else 0. */
  readonly #verdicts = new Uint8Array(UNKNOWN_KEY + 1);
  #block = -1;
  #keys: readonly string[] = [];
  /** Keys of `#keys` with a verdict: the open block's dictionary grows. */
  #decided = 0;
  /** Ids let through among NO_KEY (counted when let through), the keys and UNKNOWN_KEY. */
  #passing = 0;
  #overflow = false;

  constructor(filter: CompiledStreamFilter) {
    this.filter = filter;
  }

  /** The verdicts on every id of a block, given its keys, and how many pass (`single`). */
  verdictsFor(block: number, { keys, overflow }: BlockKeys): Uint8Array {
    const verdicts = this.#verdicts;
    const gate = this.filter.valueGate!;
    if (block !== this.#block || keys !== this.#keys) {
      this.#block = block;
      this.#keys = keys;
      this.#decided = 0;
      this.#passing = 0;
      this.#overflow = false;
      this.single = -1;
      verdicts[UNKNOWN_KEY] = 1;
      // Whether the block holds messages without values is not recorded: assume it does.
      this.#decide(NO_KEY, passesValueGate(gate, undefined));
    }
    for (let id = this.#decided + 1; id <= keys.length; id++) {
      this.#decide(id, passesValueGate(gate, keys[id - 1]));
    }
    this.#decided = keys.length;
    if (overflow && !this.#overflow) {
      this.#overflow = true;
      this.#decide(UNKNOWN_KEY, true);
    }
    return verdicts;
  }

  #decide(id: number, passes: boolean): void {
    this.#verdicts[id] = passes ? 1 : 0;
    if (!passes) return;
    this.single = ++this.#passing === 1 ? id : -1;
  }
}

/**
 * Filter summaries of the stream in blocks of {@link SUMMARY_BLOCK} offsets, so that a filtered
 * consumer replaying history skips whole blocks that cannot hold a match instead of reading
 * every message. Closed blocks are persisted in the stream's metadata (one small entry each);
 * the open block is rebuilt from the log on open.
 *
 * Blocks summarized since the stream opened also keep each message's filter-value key id
 * ({@link BlockKeys}, in memory only): a consumer whose filter has a `valueGate` jumps from
 * candidate to candidate inside them, however its matches interleave with the rest.
 */
export class FilterSummaries {
  readonly #meta: MetaStore;
  readonly #closed = new Map<number, SegmentSummary>();
  /** Per-offset keys of the newest blocks, oldest first. */
  readonly #blockKeys = new Map<number, BlockKeys>();
  #builder: SegmentSummaryBuilder | undefined;
  #block: number;
  /** The open block's keys (when it has a builder), and key to id. */
  #openKeys: BlockKeys = { ids: undefined, keys: [], overflow: false };
  #keyIds = new Map<string, number>();
  #keyChars = 0;
  #lastRaw: unknown;
  #lastId = NO_KEY;
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
    if (block !== this.#block || !this.#builder) this.#openBlock(block);
    const raw = headers === undefined ? undefined : headers[FILTER_VALUE_HEADER];
    if (raw === undefined || raw === null) this.#builder!.add(headers);
    else this.#addTagged(offset - 1 - block * SUMMARY_BLOCK, headers!, raw);
    this.#next = offset + 1;
    if (this.#next === blockStart(block + 1)) this.#closeOpenBlock(block + 1);
  }

  /**
   * The first offset at or after `position` that may hold a message the scan's filter matches:
   * closed blocks whose summary rules it out are skipped whole and, with a `valueGate`, blocks
   * with per-offset keys are searched for candidates. Sets `scan.until`: the messages from the
   * result up to it are read and filtered one by one, then `skip` is due again; and
   * `scan.sureUntil`.
   */
  skip(scan: FilterScan, position: number): number {
    const filter = scan.filter;
    scan.sureUntil = 0;
    let budget = SCAN_LIMIT;
    for (;;) {
      const block = blockOf(position);
      const end = blockStart(block + 1);
      if (block !== scan.mayBlock) {
        const summary = this.#closed.get(block);
        if (summary !== undefined && !mayMatch(filter, summary)) {
          position = end;
          continue;
        }
        // The open block has no summary yet: asked again once it closed.
        if (summary !== undefined) scan.mayBlock = block;
      }
      const keys = filter.valueGate && this.#blockKeys.get(block);
      if (position >= this.#next || budget <= 0) {
        // Nothing summarized here yet, or searched enough for one call: due again after a read.
        scan.until = position;
        return position;
      }
      if (!keys) {
        scan.until = end;
        return position;
      }
      const known = Math.min(end, this.#next);
      const found = this.#findCandidate(scan, block, keys, position, known);
      budget -= found - position;
      if (found < known) return found;
      position = known;
      if (known < end) {
        scan.until = known;
        return known;
      }
    }
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
    for (const block of this.#blockKeys.keys()) {
      if (block >= first) break;
      this.#blockKeys.delete(block);
    }
    if (this.#next < firstOffset) this.#next = firstOffset;
  }

  /**
   * Searches the keys of `block` from `position` to `known` for the first message the scan's
   * gate lets through, and sets `scan.until` to the end of the run of such messages it starts.
   * Returns `known` when there is none.
   */
  #findCandidate(
    scan: FilterScan,
    block: number,
    blockKeys: BlockKeys,
    position: number,
    known: number,
  ): number {
    const verdicts = scan.verdictsFor(block, blockKeys);
    const ids = blockKeys.ids;
    if (ids === undefined) {
      // No message of the block carries filter values.
      scan.until = known;
      return verdicts[NO_KEY] === 0 ? known : position;
    }
    const base = blockStart(block);
    const last = known - base;
    const single = scan.single;
    let i = position - base;
    let end: number;
    let sure = scan.filter.valueGate!.exact;
    if (single >= 0) {
      // Ids past `last` are not written yet (0): a find there is none.
      i = ids.indexOf(single, i);
      if (i < 0 || i >= last) return known;
      end = i + 1;
      while (end < last && ids[end] === single) end++;
      sure &&= single !== UNKNOWN_KEY;
    } else {
      while (i < last && verdicts[ids[i]!] === 0) i++;
      if (i === last) return known;
      for (end = i; end < last; end++) {
        const id = ids[end]!;
        if (verdicts[id] === 0) break;
        if (id === UNKNOWN_KEY) sure = false;
      }
    }
    scan.until = base + end;
    scan.sureUntil = sure ? base + end : 0;
    return base + i;
  }

  /** Adds the message at `index` of the open block, which carries filter-value header `raw`. */
  #addTagged(index: number, headers: Headers, raw: unknown): void {
    // A key the block has seen had its values summarized then: only the count and the
    // coordinates are left to add.
    let id = this.#lastId;
    let seen = true;
    if (raw !== this.#lastRaw) {
      const key = filterValueKey(raw)!;
      const known = this.#keyIds.get(key);
      seen = known !== undefined;
      id = known ?? this.#addKey(key);
      this.#lastRaw = raw;
      this.#lastId = id;
    }
    const keys = this.#openKeys;
    keys.ids ??= new Uint8Array(SUMMARY_BLOCK);
    keys.ids[index] = id;
    this.#builder!.add(headers, seen && id !== UNKNOWN_KEY);
  }

  /** Adds a key to the open block's dictionary; its id, or {@link UNKNOWN_KEY} without room. */
  #addKey(key: string): number {
    const keys = this.#openKeys.keys;
    if (keys.length >= UNKNOWN_KEY - 1 || this.#keyChars + key.length > MAX_KEY_CHARS) {
      this.#openKeys.overflow = true;
      return UNKNOWN_KEY;
    }
    keys.push(key);
    this.#keyChars += key.length;
    this.#keyIds.set(key, keys.length);
    return keys.length;
  }

  #openBlock(block: number): void {
    this.#closeOpenBlock(block);
    this.#builder = new SegmentSummaryBuilder();
    this.#openKeys = { ids: undefined, keys: [], overflow: false };
    this.#keyIds = new Map();
    this.#keyChars = 0;
    this.#lastRaw = undefined;
    this.#blockKeys.set(block, this.#openKeys);
    if (this.#blockKeys.size > MAX_KEY_BLOCKS) {
      this.#blockKeys.delete(this.#blockKeys.keys().next().value!);
    }
  }

  #closeOpenBlock(nextBlock: number): void {
    const builder = this.#builder;
    if (builder) {
      const summary = builder.toJSON();
      this.#closed.set(this.#block, summary);
      this.#meta.set(KEY_PREFIX + this.#block, summary as unknown as JsonValue);
    }
    this.#builder = undefined;
    this.#keyIds = new Map();
    this.#block = nextBlock;
  }
}
