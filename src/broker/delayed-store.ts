/**
 * The messages one delayed exchange holds until they are due: a log holds the messages, and a
 * due-time index (a flat binary heap of offsets and due times: two number arrays, no object per
 * message) orders them. A durable exchange on persistent storage has its log in the broker's
 * namespace, read back when due, so a million pending messages cost memory for their index only;
 * another has it on memory storage, which packs the messages into shared buffers.
 *
 * In a persistent log, a record is the message as published, `x-delay` header included, with its
 * publish time as timestamp: its due time is the two added, as LavinMQ computes it, so recovery
 * rebuilds the index from the log alone. A memory log keeps the message without `x-delay` (it is
 * routed so), which lets consecutive messages share their properties. A record is marked deleted
 * once what it was routed to holds it durably, and that mark waits for nothing else.
 */
import FlatQueue from 'flatqueue';
import { delayOf, withoutDelay } from '../exchanges/delayed.js';
import { messageCodec } from '../message/codec.js';
import type { StoredMessage } from '../message/types.js';
import type { Log, Namespace } from '../storage/types.js';

/** A message that fell due, with the offset its store settles it by. */
export interface DueMessage {
  readonly id: number;
  readonly due: number;
  /** Undefined when its record could no longer be read (damaged storage, reported by it). */
  readonly message: StoredMessage | undefined;
}

/** Prefix of the name of the log holding a delayed exchange's messages. */
const LOG_PREFIX = 'delayed:';

/** The name of the log of a delayed exchange. */
export function delayedLogName(exchange: string): string {
  return `${LOG_PREFIX}${exchange}`;
}

/** The exchange whose log this is, or undefined for a log of another kind. */
export function exchangeOfLog(log: string): string | undefined {
  return log.startsWith(LOG_PREFIX) ? log.slice(LOG_PREFIX.length) : undefined;
}

/** A message a persistent log holds: where, when it falls due, whether it outlives a restart. */
export interface StoredDelayed {
  readonly offset: number;
  readonly due: number;
  readonly persistent: boolean;
}

/** The live records of a persistent delayed log, read without changing it (`mqlite inspect`). */
export function* storedDelayed(log: Log<StoredMessage>): Generator<StoredDelayed> {
  for (const cursor = log.cursor(); cursor.next(); ) {
    const message = cursor.record;
    if (message === undefined) continue;
    yield {
      offset: cursor.offset,
      due: cursor.timestamp + (delayOf(message.properties.headers) ?? 0),
      persistent: message.properties.deliveryMode === 2,
    };
  }
}

export class DelayedStore {
  readonly #index = new FlatQueue<number>();
  /** Messages taken as due and not yet settled (still being routed). */
  #routing = 0;
  readonly #log: Log<StoredMessage>;
  readonly #persistent: boolean;

  private constructor(log: Log<StoredMessage>, persistent: boolean) {
    this.#log = log;
    this.#persistent = persistent;
  }

  /**
   * The store of `exchange`, on its log in `namespace`, with what that log holds indexed. On a
   * persistent namespace records of transient messages are dropped, as a broker restart drops
   * them.
   */
  static async open(namespace: Namespace, exchange: string, persistent: boolean) {
    // A settled message's mark waits for nothing published after it.
    const log = await namespace.openLog(delayedLogName(exchange), messageCodec, {
      independentDeletions: true,
    });
    const store = new DelayedStore(log, persistent);
    const transient: number[] = [];
    for (const { offset, due, persistent: kept } of storedDelayed(log)) {
      if (kept || !persistent) store.#index.push(offset, due);
      else transient.push(offset);
    }
    for (const offset of transient) log.markDeleted(offset);
    return store;
  }

  /** How many messages it holds. */
  get size(): number {
    // Those taken are held until their settling is durable: a crash before then routes them
    // again on reopen.
    return this.#index.length + this.#routing;
  }

  /** When the first message falls due (ms since epoch), undefined when it holds none. */
  get nextDue(): number | undefined {
    return this.#index.peekValue();
  }

  /**
   * Holds a message published at `now` for `delay` ms. Resolves once it is as durable as its
   * store makes it: on a persistent log, a persistent message once synced.
   */
  hold(message: StoredMessage, now: number, delay: number): Promise<void> {
    const log = this.#log;
    if (!this.#persistent) {
      this.#index.push(log.append(withoutDelay(message), now), now + delay);
      return Promise.resolve();
    }
    this.#index.push(log.append(message, now), now + delay);
    return message.properties.deliveryMode === 2 ? log.sync() : Promise.resolve();
  }

  /**
   * Takes the messages due at `now`, in due order, those due at once in publish order (the
   * heap does not keep ties in order; offsets grow with publishing, so a sort does).
   */
  takeDue(now: number): DueMessage[] {
    const index = this.#index;
    const taken: { id: number; due: number }[] = [];
    for (let due = index.peekValue(); due !== undefined && due <= now; due = index.peekValue()) {
      taken.push({ id: index.pop()!, due });
    }
    if (taken.length === 0) return [];
    if (index.length === 0) index.shrink();
    this.#routing += taken.length;
    taken.sort((a, b) => a.due - b.due || a.id - b.id);
    return taken.map(({ id, due }) => ({ id, due, message: this.#log.get(id) }));
  }

  /**
   * Forgets messages taken and routed: marks their records deleted, and counts them no longer
   * once that is durable. Called once what they were routed to holds them durably: the marks go
   * to the disk at once, not after the messages published since (see `independentDeletions`),
   * so a crash routes again only what was settling at that moment.
   */
  async settle(ids: readonly number[]): Promise<void> {
    for (const id of ids) this.#log.markDeleted(id);
    try {
      await this.#log.sync();
    } finally {
      this.#routing -= ids.length;
    }
  }

  /** Drops what it holds from memory (its log is the caller's to delete). */
  clear(): void {
    this.#index.clear();
    this.#index.shrink();
  }
}
