/**
 * The delayed exchanges of a broker: a store of pending messages for each (see `DelayedStore`),
 * and one timer for them all, set for the earliest due time, whatever the number of messages.
 * When it fires, every message due by the broker's clock is routed through its exchange's
 * bindings as they stand then, in due order (ties in publish order), and its record settled once
 * the queues it reached hold it durably. Queue and store are separate logs, so a crash in
 * between (after the queues' sync, before the settle is written) routes it again after recovery:
 * only messages settling at the crash, on fs a tick's worth after a process crash, up to one
 * fsync round after a power cut. `messages` counts a message until its settle is durable.
 */
import type { TimerHandle } from '../clock.js';
import type { StoredMessage } from '../message/types.js';
import { memoryStorage } from '../storage/memory.js';
import type { Namespace } from '../storage/types.js';
import type { BrokerContext } from './broker-context.js';
import { DelayedStore, delayedLogName, exchangeOfLog } from './delayed-store.js';

/** The pending messages of a delayed exchange, as `broker.exchanges()` lists them. */
export interface DelayedInfo {
  /** Messages held until they are due. */
  readonly messages: number;
  /** When the first of them falls due (ms since epoch), undefined when there is none. */
  readonly nextDue: number | undefined;
}

/** A delayed exchange's store, or its opening. */
interface Entry {
  store: DelayedStore | undefined;
  readonly ready: Promise<DelayedStore>;
  /** Whether its log is in the broker's (persistent) namespace. */
  readonly persistent: boolean;
}

export class DelayedMessages {
  readonly #context: BrokerContext;
  readonly #namespace: Namespace;
  readonly #route: (exchange: string, message: StoredMessage) => Promise<void>;
  readonly #entries = new Map<string, Entry>();
  /** Deletions of the logs of exchanges gone, by exchange name. */
  readonly #deleting = new Map<string, Promise<void>>();
  /** Settling of routed messages under way. */
  readonly #work = new Set<Promise<void>>();
  #transient: Promise<Namespace> | undefined;
  #timer: TimerHandle | undefined;
  #timerDue = Number.POSITIVE_INFINITY;
  #closed = false;

  /**
   * @param namespace the broker's own: a durable delayed exchange's log lives there.
   * @param route routes a message that fell due through its exchange.
   */
  constructor(
    context: BrokerContext,
    namespace: Namespace,
    route: (exchange: string, message: StoredMessage) => Promise<void>,
  ) {
    this.#context = context;
    this.#namespace = namespace;
    this.#route = route;
  }

  /**
   * Opens the stores of the delayed exchanges restored, indexing what their logs hold, and
   * deletes the logs of exchanges gone. A log that cannot be opened is reported; its exchange
   * refuses delayed publishes with that error, and the others work on.
   */
  async restore(): Promise<void> {
    const exchanges = this.#context.exchanges;
    if (this.#context.storage.supports.persistent) {
      for (const log of await this.#namespace.listLogs()) {
        const name = exchangeOfLog(log);
        if (name !== undefined && !(exchanges.isDelayed(name) && exchanges.get(name)?.durable)) {
          await this.#namespace.deleteLog(log);
        }
      }
    }
    for (const { name } of exchanges.list()) this.changed(name);
    for (const entry of this.#entries.values()) await entry.ready.catch(ignore);
    this.#arm();
  }

  /**
   * Follows a change of an exchange or of the policies: a new delayed one gets a store, one gone
   * loses its own. One a policy no longer delays keeps its store until it is deleted: what it
   * holds is routed when due.
   */
  changed(name: string): void {
    const exchanges = this.#context.exchanges;
    const delayed = exchanges.isDelayed(name);
    const entry = this.#entries.get(name);
    if (delayed && entry === undefined) this.#open(name);
    else if (!delayed && entry !== undefined && !exchanges.has(name)) this.#drop(name, entry);
  }

  /** Resolves once the store of a delayed exchange is open (rejects when it cannot be). */
  async ready(name: string): Promise<void> {
    await this.#entries.get(name)?.ready;
  }

  /**
   * Holds a message published now to a delayed exchange for `delay` ms. Resolves once it is as
   * durable as its exchange and storage make it.
   */
  hold(exchange: string, message: StoredMessage, delay: number): Promise<void> {
    const entry = this.#entries.get(exchange);
    if (entry === undefined)
      return Promise.reject(new Error(`no store for exchange '${exchange}'`));
    const now = this.#context.clock.now();
    const store = entry.store;
    if (store === undefined) {
      return entry.ready.then((opened) => this.#hold(opened, message, now, delay));
    }
    return this.#hold(store, message, now, delay);
  }

  /** The pending messages of a delayed exchange, undefined for another. */
  info(exchange: string): DelayedInfo | undefined {
    const entry = this.#entries.get(exchange);
    if (entry === undefined) return undefined;
    return { messages: entry.store?.size ?? 0, nextDue: entry.store?.nextDue };
  }

  /** Stops the timer and waits for the routed messages being settled. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#disarm();
    while (this.#work.size > 0 || this.#deleting.size > 0) {
      await Promise.all([...this.#work, ...this.#deleting.values()]);
    }
    await (await this.#transient)?.close();
  }

  #hold(store: DelayedStore, message: StoredMessage, now: number, delay: number): Promise<void> {
    const stored = store.hold(message, now, delay);
    if (now + delay < this.#timerDue) this.#arm();
    return stored;
  }

  #open(name: string): void {
    const state = this.#context.exchanges.get(name);
    const persistent = this.#context.storage.supports.persistent && state?.durable === true;
    const open = async (): Promise<DelayedStore> => {
      // A log of the same name being deleted (the exchange deleted and declared again) goes first.
      await this.#deleting.get(name);
      const namespace = persistent ? this.#namespace : await this.#memory();
      const store = await DelayedStore.open(namespace, name, persistent);
      entry.store = store;
      return store;
    };
    const entry: Entry = { store: undefined, ready: open(), persistent };
    entry.ready.catch((error: unknown) => this.#context.onError(error, { source: 'delayed' }));
    this.#entries.set(name, entry);
  }

  /** The memory namespace of the exchanges whose messages do not outlive the process. */
  #memory(): Promise<Namespace> {
    this.#transient ??= memoryStorage().namespace('delayed');
    return this.#transient;
  }

  #drop(name: string, entry: Entry): void {
    this.#entries.delete(name);
    const deleted = entry.ready.then(async (store) => {
      store.clear();
      const namespace = entry.persistent ? this.#namespace : await this.#memory();
      await namespace.deleteLog(delayedLogName(name));
    }, ignore);
    const previous = this.#deleting.get(name);
    const done: Promise<void> = Promise.all([previous, deleted])
      .then(ignore, (error: unknown) => this.#context.onError(error, { source: 'delayed' }))
      .finally(() => {
        if (this.#deleting.get(name) === done) this.#deleting.delete(name);
      });
    this.#deleting.set(name, done);
  }

  /** Sets the one timer for the earliest due time of every store, or clears it when none. */
  #arm(): void {
    let next = Number.POSITIVE_INFINITY;
    for (const { store } of this.#entries.values()) {
      const due = store?.nextDue;
      if (due !== undefined && due < next) next = due;
    }
    if (next === this.#timerDue || this.#closed) return;
    this.#disarm();
    if (next === Number.POSITIVE_INFINITY) return;
    const clock = this.#context.clock;
    this.#timerDue = next;
    this.#timer = clock.setTimeout(() => this.#fire(), next - clock.now());
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#context.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
  }

  /** Routes every message due now, exchange by exchange, then sets the timer again. */
  #fire(): void {
    this.#timer = undefined;
    this.#timerDue = Number.POSITIVE_INFINITY;
    if (this.#closed || this.#context.closed()) return;
    const now = this.#context.clock.now();
    for (const [exchange, { store }] of this.#entries) {
      if (store === undefined) continue;
      const due = store.takeDue(now);
      if (due.length === 0) continue;
      const routed: Promise<void>[] = [];
      for (const { message } of due) {
        if (message !== undefined) routed.push(this.#routeDue(exchange, message));
      }
      const ids = due.map(({ id }) => id);
      this.#track(
        Promise.all(routed).then(() => {
          // A store dropped with its exchange meanwhile has nothing left to settle.
          if (this.#entries.get(exchange)?.store !== store) return;
          return store.settle(ids);
        }),
      );
    }
    this.#arm();
  }

  /** Routes a message that fell due; a queue refusing it is reported, not retried. */
  #routeDue(exchange: string, message: StoredMessage): Promise<void> {
    return this.#route(exchange, message).catch((error: unknown) =>
      this.#context.onError(error, { source: 'delayed' }),
    );
  }

  #track(work: Promise<void>): void {
    const tracked = work
      .catch((error: unknown) => this.#context.onError(error, { source: 'delayed' }))
      .finally(() => this.#work.delete(tracked));
    this.#work.add(tracked);
  }
}

function ignore(): void {}
