/**
 * The stream's consumers whose filter bounds their matches to a region, or to messages carrying
 * given filter values. They are indexed for their whole life (re-indexing at every wake-up would
 * cost more than the wake-up): while they wait at the end, a publish finds them through the index
 * and hands them their matches, instead of every consumer being woken to read every message.
 * Separate from `StreamQueue` because it is the filters' side of waking consumers: the stream
 * only tells it what was published and when its tick ends.
 */
import { GeoIndex, ValueIndex } from '../../filters/index.js';
import type { StoredMessage } from '../../message/types.js';
import type { StreamConsumer } from './stream-consumer.js';

/** Indexed matches gathered before delivering them: enough to overlap their cache misses. */
const MATCH_BATCH = 64;

/** The indexed consumers of one stream, and the messages published for them this tick. */
export class IndexedConsumers {
  readonly #geoConsumers = new GeoIndex<StreamConsumer>();
  readonly #valueConsumers = new ValueIndex<StreamConsumer>();
  /** The indexed consumers that track their offset: each tick moves them past what they skip. */
  readonly #tracked = new Set<StreamConsumer>();
  /** Offsets below this were checked against the indexed consumers. */
  #scanned: number;
  #size = 0;
  /** Offsets and messages with headers published this tick while indexed consumers existed. */
  #offsets: number[] = [];
  #messages: StoredMessage[] = [];
  #spareOffsets: number[] = [];
  #spareMessages: StoredMessage[] = [];
  /**
   * Indexed matches found and not yet delivered: the consumer, and the index of its message in
   * the tick's buffers. Delivered in order once {@link MATCH_BATCH} gathered (see
   * `#deliverMatchBatch`).
   */
  readonly #matchConsumers: StreamConsumer[] = [];
  readonly #matchMessages: number[] = [];
  readonly #matchStates = new Uint8Array(MATCH_BATCH);
  /** Index of the message the indexes are searched for. */
  #matchMessage = 0;

  /** @param scanned the log's next offset: nothing before it waits for a match. */
  constructor(scanned: number) {
    this.#scanned = scanned;
  }

  /** Indexed consumers. */
  get size(): number {
    return this.#size;
  }

  /**
   * Offsets below this were checked against the consumers waiting in the indexes: such a
   * consumer that was not woken matched none of them.
   */
  get scanned(): number {
    return this.#scanned;
  }

  /** Indexes a consumer whose filter bounds its matches (`consumer.indexed`). */
  add(consumer: StreamConsumer): void {
    this.#size++;
    const filter = consumer.filter!;
    if (!this.#geoConsumers.insert(consumer, filter)) this.#valueConsumers.insert(consumer, filter);
    if (consumer.tracking) this.#tracked.add(consumer);
  }

  /** Forgets a consumer that went (any consumer: one never indexed is ignored). */
  remove(consumer: StreamConsumer): void {
    if (this.#geoConsumers.remove(consumer) || this.#valueConsumers.remove(consumer)) {
      this.#size--;
    }
    this.#tracked.delete(consumer);
  }

  /** A message with headers was appended at `offset`: kept for the tick's end if anyone waits. */
  published(offset: number, message: StoredMessage): void {
    if (this.#size === 0) return;
    this.#offsets.push(offset);
    this.#messages.push(message);
  }

  /**
   * The tick ended with the log's next offset at `end`: finds the waiting indexed consumers that
   * messages published this tick match (through the indexes, not by asking every consumer) and
   * hands each exactly its matches.
   */
  wake(end: number): void {
    if (this.#offsets.length > 0) this.#deliverMatches();
    this.#scanned = end;
    // A skipped message never holds back a stored offset, even of a consumer nobody woke.
    for (const consumer of this.#tracked) consumer.passTo(end);
  }

  /** Forgets every consumer (the stream closed). */
  clear(): void {
    this.#geoConsumers.clear();
    this.#valueConsumers.clear();
    this.#size = 0;
    this.#tracked.clear();
  }

  #deliverMatches(): void {
    // Swap buffers: a callback that publishes fills the other pair for the next tick.
    const offsets = this.#offsets;
    const messages = this.#messages;
    this.#offsets = this.#spareOffsets;
    this.#messages = this.#spareMessages;
    this.#spareOffsets = offsets;
    this.#spareMessages = messages;
    const geo = this.#geoConsumers.size > 0 ? this.#geoConsumers : undefined;
    const byValue = this.#valueConsumers.size > 0 ? this.#valueConsumers : undefined;
    for (let i = 0; i < offsets.length; i++) {
      const headers = messages[i]!.properties.headers!;
      this.#matchMessage = i;
      geo?.forEachMatch(headers, this.#gatherMatch);
      byValue?.forEachMatch(headers, this.#gatherMatch);
      if (this.#matchConsumers.length >= MATCH_BATCH) this.#deliverMatchBatch(offsets, messages);
    }
    this.#deliverMatchBatch(offsets, messages);
    offsets.length = 0;
    messages.length = 0;
  }

  readonly #gatherMatch = (consumer: StreamConsumer): void => {
    this.#matchConsumers.push(consumer);
    this.#matchMessages.push(this.#matchMessage);
  };

  /**
   * Delivers the gathered matches in order. Each consumer's state is read for the whole batch
   * before any delivery: thousands of consumers do not fit the CPU caches, and these independent
   * reads overlap their misses where a delivery at a time would wait for each in turn. A consumer
   * that is not waiting for a match then stays so: one reading the log on its own reads it there.
   */
  #deliverMatchBatch(offsets: readonly number[], messages: readonly StoredMessage[]): void {
    const consumers = this.#matchConsumers;
    const at = this.#matchMessages;
    const states = this.#matchStates;
    // A single message may match more consumers than a batch holds.
    for (let start = 0; start < consumers.length; start += MATCH_BATCH) {
      const end = Math.min(consumers.length, start + MATCH_BATCH);
      for (let i = start; i < end; i++)
        states[i - start] = consumers[i]!.waitState(offsets[at[i]!]!);
      for (let i = start; i < end; i++) {
        if (states[i - start] === 0) continue;
        const offset = offsets[at[i]!]!;
        // Offsets below this were checked and handed over: a consumer cancelled from here on
        // resumes here.
        this.#scanned = offset;
        consumers[i]!.deliverMatch(offset, messages[at[i]!]!);
      }
    }
    consumers.length = 0;
    at.length = 0;
  }
}
