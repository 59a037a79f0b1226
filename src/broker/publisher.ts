/**
 * Publishing through a broker's exchanges: a publish is checked, normalized once and stored in
 * every queue it reaches (one copy, one route lookup, one store call per queue). One that reaches
 * none is dropped and counted, or refused with 312 NO_ROUTE when `mandatory`, as RabbitMQ does.
 */

import { type UnroutableEvent, unroutableChannel } from '../diagnostics.js';
import { assertOpen, NoRouteError, resourceName } from '../errors.js';
import { delayOf, withoutDelay } from '../exchanges/delayed.js';
import { checkGeoHeaders } from '../filters/index.js';
import { normalizeMessage } from '../message/normalize.js';
import type { FieldTable, PublishBody, StoredMessage } from '../message/types.js';
import type { BrokerContext } from './broker-context.js';
import { Deduplicators } from './deduplicators.js';
import type { DelayedMessages } from './delayed-messages.js';
import type { ExchangePublishOptions } from './exchange-handle.js';
import type { OpenQueues } from './open-queues.js';
import { routingKeysOf, withoutBcc } from './sender-selected.js';

/** Longest routing key: an AMQP short string. */
const MAX_KEY_BYTES = 255;

/** The publishes of one broker, and its counters of unroutable messages. */
export class Publisher {
  readonly #context: BrokerContext;
  readonly #queues: OpenQueues;
  readonly #delayed: DelayedMessages;
  readonly #deduplicators: Deduplicators;
  #unroutableDropped = 0;
  #unroutableReturned = 0;
  /** Told the name of each queue a message is stored in (a server's per-queue counts). */
  readonly #stored: ((queue: string) => void)[] = [];

  constructor(context: BrokerContext, queues: OpenQueues, delayed: DelayedMessages) {
    this.#context = context;
    this.#queues = queues;
    this.#delayed = delayed;
    this.#deduplicators = new Deduplicators(context.clock);
  }

  /** Duplicates dropped by each exchange and queue declared with `x-message-deduplication`. */
  deduplicated(): { exchanges: Record<string, number>; queues: Record<string, number> } {
    return {
      exchanges: this.#deduplicators.dropped(
        this.#context.exchanges.list().map((e) => [e.name, e.arguments, e.arguments] as const),
      ),
      queues: this.#deduplicators.dropped(
        [...this.#queues.values()].map(
          (q) => [q.declaration.name, q, q.declaration.arguments] as const,
        ),
      ),
    };
  }

  /** Messages routed nowhere and dropped. */
  get unroutableDropped(): number {
    return this.#unroutableDropped;
  }

  /** `mandatory` messages routed nowhere and refused. */
  get unroutableReturned(): number {
    return this.#unroutableReturned;
  }

  /** Tells `listener` the queue of every message stored from now on; returns its removal. */
  onStored(listener: (queue: string) => void): () => void {
    this.#stored.push(listener);
    return () => {
      const at = this.#stored.indexOf(listener);
      if (at >= 0) this.#stored.splice(at, 1);
    };
  }

  /**
   * Routes a publish to an exchange, `""` being the default exchange. `routed`, for a message
   * that asks for no durability (not persistent, or reaching no durable queue, or on storage that
   * is not persistent), is called once every queue it reaches holds it, before the last of them
   * delivers it: such a message is confirmed then, as RabbitMQ confirms it, without waiting for
   * the storage.
   */
  publish(
    exchange: string,
    body: PublishBody,
    options: ExchangePublishOptions | undefined,
    routed?: () => void,
  ): Promise<void> {
    try {
      assertOpen(this.#context.closed(), 'broker');
      const exchanges = this.#context.exchanges;
      exchanges.checkPublish(exchange);
      const routingKey = options?.routingKey ?? '';
      if (typeof routingKey !== 'string') throw new TypeError('routingKey must be a string');
      // A UTF-16 unit is at most 3 UTF-8 bytes: short keys need no byte count.
      if (routingKey.length > MAX_KEY_BYTES / 3 && Buffer.byteLength(routingKey) > MAX_KEY_BYTES) {
        throw new RangeError(`routing key is longer than ${MAX_KEY_BYTES} bytes`);
      }
      const normalized = normalizeMessage(body, options, exchange, routingKey);
      if (this.#context.strict) checkGeoHeaders(normalized.properties.headers);
      // A delayed exchange holds what has an `x-delay` header: no route yet, so no return either.
      const delay = exchanges.isDelayed(exchange)
        ? delayOf(normalized.properties.headers)
        : undefined;
      if (delay !== undefined) return this.#delayed.hold(exchange, normalized, delay);
      return this.#deliver(exchange, normalized, options?.mandatory === true, routed);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Routes a message a delayed exchange held, now due, through the exchange's bindings as they
   * stand: without its `x-delay` header, and dropped (counted) when it reaches no queue.
   */
  routeDue(exchange: string, message: StoredMessage): Promise<void> {
    try {
      return this.#deliver(exchange, withoutDelay(message), false, undefined);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Stores a normalized message in every queue it reaches (see `publish`). */
  #deliver(
    exchange: string,
    normalized: StoredMessage,
    mandatory: boolean,
    routed: (() => void) | undefined,
  ): Promise<void> {
    const { routingKey } = normalized;
    const headers = normalized.properties.headers;
    const targets = this.#isDuplicate(exchange, headers)
      ? new Set<string>()
      : this.#context.exchanges.route(
          exchange,
          routingKeysOf(routingKey, headers),
          headers,
          normalized.properties,
        );
    this.#dropDuplicates(targets, headers);
    const message = withoutBcc(normalized);
    if (targets.size === 0) {
      if (mandatory) {
        this.#unroutableReturned++;
        throw new NoRouteError(
          `message published to ${resourceName('exchange', exchange, this.#context.vhost)} with routing key '${routingKey}' reached no queue`,
        );
      }
      this.#unroutableDropped++;
      if (unroutableChannel.hasSubscribers) {
        unroutableChannel.publish({ exchange, routingKey, message } satisfies UnroutableEvent);
      }
      return Promise.resolve();
    }
    // A queue takes its bindings with it when it goes, so every target is open or damaged.
    const enqueued = routed && !this.#asksDurability(message, targets) ? routed : undefined;
    if (targets.size === 1) {
      for (const name of targets) return this.#storeIn(name, message, enqueued);
    }
    let left = targets.size;
    const each =
      enqueued &&
      (() => {
        if (--left === 0) enqueued();
      });
    // Queues that store at once answer with one shared settled promise (memory storage): it is
    // awaited once, so a fan-out makes no `Promise.all` and no element closures per message.
    let first: Promise<void> | undefined;
    let distinct: Promise<void>[] | undefined;
    for (const name of targets) {
      const stored = this.#storeIn(name, message, each);
      if (first === undefined) first = stored;
      else if (stored !== first) (distinct ??= [first]).push(stored);
    }
    return distinct === undefined ? first! : Promise.all(distinct).then(ignore);
  }

  /**
   * Whether the exchange deduplicates and has seen the message: a duplicate is routed nowhere
   * (returned when `mandatory`), as LavinMQ drops it.
   */
  #isDuplicate(exchange: string, headers: Readonly<FieldTable> | undefined): boolean {
    // Its arguments, not `get()`'s description: nothing allocated per message.
    const args = this.#context.exchanges.argumentsOf(exchange);
    return args !== undefined && this.#deduplicators.of(args, args)?.isDuplicate(headers) === true;
  }

  /** Takes out the queues that deduplicate and have seen the message: it is not stored there. */
  #dropDuplicates(targets: Set<string>, headers: Readonly<FieldTable> | undefined): void {
    for (const name of targets) {
      const entry = this.#queues.get(name);
      if (
        entry &&
        this.#deduplicators.of(entry, entry.declaration.arguments)?.isDuplicate(headers)
      ) {
        targets.delete(name);
      }
    }
  }

  /** Stores a routed message in a queue; a damaged one refuses it with its error. */
  #storeIn(
    name: string,
    message: StoredMessage,
    enqueued: (() => void) | undefined,
  ): Promise<void> {
    const entry = this.#queues.get(name);
    if (entry) {
      // An indexed loop: nothing allocated per message, nothing done without listeners.
      for (let i = 0; i < this.#stored.length; i++) this.#stored[i]!(name);
      return entry.queue.publishMessage(message, enqueued);
    }
    return Promise.reject(this.#context.damaged.errorOf(name));
  }

  /** A persistent message reaching a durable queue on persistent storage. */
  #asksDurability(message: StoredMessage, targets: ReadonlySet<string>): boolean {
    if (message.properties.deliveryMode !== 2 || !this.#context.storage.supports.persistent) {
      return false;
    }
    for (const name of targets) {
      const entry = this.#queues.get(name);
      // A damaged queue refuses the message: it is nacked whatever this says.
      if (entry === undefined || entry.declaration.durable) return true;
    }
    return false;
  }
}

function ignore(): void {}
