/**
 * The messages one delayed exchange holds until they are due. A due-time index (a flat binary
 * heap of ids and due times: two number arrays, no object per message) orders them; the messages
 * themselves stay in a log of the broker's namespace when the exchange is durable on persistent
 * storage (read back when due, so a million pending messages cost memory for their index only),
 * and in a map otherwise.
 *
 * In the log, a record is the message as published, `x-delay` header included, with its publish
 * time as timestamp: its due time is the two added, as LavinMQ computes it, so recovery rebuilds
 * the index from the log alone. A record is marked deleted once what it was routed to holds it.
 */
import FlatQueue from 'flatqueue';
import { delayOf } from '../exchanges/delayed.js';
import { messageCodec } from '../message/codec.js';
import type { StoredMessage } from '../message/types.js';
import type { Log, Namespace } from '../storage/types.js';

/** A message that fell due, with the id its store settles it by. */
export interface DueMessage {
  readonly id: number;
  readonly due: number;
  /** Undefined when its record could no longer be read (damaged storage, reported by it). */
  readonly message: StoredMessage | undefined;
}

/** Prefix of the name of the log holding a durable delayed exchange's messages. */
const LOG_PREFIX = 'delayed:';

/** The name of the log of a delayed exchange, in the broker's namespace. */
export function delayedLogName(exchange: string): string {
  return `${LOG_PREFIX}${exchange}`;
}

/** The exchange whose log this is, or undefined for a log of another kind. */
export function exchangeOfLog(log: string): string | undefined {
  return log.startsWith(LOG_PREFIX) ? log.slice(LOG_PREFIX.length) : undefined;
}

/** A message a delayed exchange's log holds: where, when it falls due, whether it outlives a restart. */
export interface StoredDelayed {
  readonly offset: number;
  readonly due: number;
  readonly persistent: boolean;
}

/** The live records of a delayed exchange's log, read without changing it (`mqlite inspect`). */
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
  /** Messages by id, when there is no log. */
  readonly #held = new Map<number, StoredMessage>();
  readonly #log: Log<StoredMessage> | undefined;
  #nextId = 1;

  private constructor(log: Log<StoredMessage> | undefined) {
    this.#log = log;
  }

  /** A store keeping its messages in memory (a transient exchange, or storage that is). */
  static inMemory(): DelayedStore {
    return new DelayedStore(undefined);
  }

  /**
   * A store on the log of `exchange` in `namespace`, with what it holds already indexed. Records
   * of transient messages are dropped, as a broker restart drops them.
   */
  static async onLog(namespace: Namespace, exchange: string): Promise<DelayedStore> {
    const log = await namespace.openLog(delayedLogName(exchange), messageCodec);
    const store = new DelayedStore(log);
    const transient: number[] = [];
    for (const { offset, due, persistent } of storedDelayed(log)) {
      if (persistent) store.#index.push(offset, due);
      else transient.push(offset);
    }
    for (const offset of transient) log.markDeleted(offset);
    return store;
  }

  /** Whether its messages outlive the process. */
  get persistent(): boolean {
    return this.#log !== undefined;
  }

  /** How many messages it holds. */
  get size(): number {
    return this.#index.length;
  }

  /** When the first message falls due (ms since epoch), undefined when it holds none. */
  get nextDue(): number | undefined {
    return this.#index.peekValue();
  }

  /**
   * Holds a message published at `now` for `delay` ms. Resolves once it is as durable as its
   * store makes it: on a log, a persistent message once synced.
   */
  hold(message: StoredMessage, now: number, delay: number): Promise<void> {
    const log = this.#log;
    if (log === undefined) {
      const id = this.#nextId++;
      this.#held.set(id, message);
      this.#index.push(id, now + delay);
      return Promise.resolve();
    }
    this.#index.push(log.append(message, now), now + delay);
    return message.properties.deliveryMode === 2 ? log.sync() : Promise.resolve();
  }

  /**
   * Takes the messages due at `now`, in due order, those due at once in publish order (the
   * heap does not keep ties in order; ids grow with publishing, so a sort does).
   */
  takeDue(now: number): DueMessage[] {
    const index = this.#index;
    const taken: { id: number; due: number }[] = [];
    for (let due = index.peekValue(); due !== undefined && due <= now; due = index.peekValue()) {
      taken.push({ id: index.pop()!, due });
    }
    if (taken.length === 0) return [];
    if (index.length === 0) index.shrink();
    taken.sort((a, b) => a.due - b.due || a.id - b.id);
    return taken.map(({ id, due }) => ({ id, due, message: this.#read(id) }));
  }

  /** Forgets messages taken and routed (on a log: marks their records deleted). */
  settle(ids: readonly number[]): void {
    const log = this.#log;
    if (log === undefined) for (const id of ids) this.#held.delete(id);
    else for (const id of ids) log.markDeleted(id);
  }

  /** Resolves once every record settled so far is durably marked deleted. */
  sync(): Promise<void> {
    return this.#log?.sync() ?? Promise.resolve();
  }

  /** Drops what it holds from memory (its log, if any, is the caller's to delete or close). */
  clear(): void {
    this.#index.clear();
    this.#index.shrink();
    this.#held.clear();
  }

  #read(id: number): StoredMessage | undefined {
    return this.#log ? this.#log.get(id) : this.#held.get(id);
  }
}
