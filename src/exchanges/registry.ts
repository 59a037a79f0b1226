import { AccessRefusedError, DEFAULT_VHOST, PreconditionFailedError } from '../errors.js';
import type { FieldTable, MessageProperties } from '../message/types.js';
import { emptyTable } from '../table.js';
import { BindingIndex, bindingId } from './binding-index.js';
import { checkDeclaration } from './declaration.js';
import { checkShortString, copyArgs } from './declare-checks.js';
import { bindingInfo, destinationKey, exchangeOfKey } from './destination-key.js';
import { ExchangeErrors } from './exchange-errors.js';
import {
  DEFAULT_EXCHANGE,
  type ExchangeState,
  info,
  newExchangeState,
  PREDECLARED,
} from './exchange-state.js';
import { fromJsonTable } from './field-values.js';
import { Routing } from './routing.js';
import { type ExchangeRecord, type ExchangesSnapshot, exchangeRecord } from './snapshot.js';
import {
  type Binding,
  type BindingInfo,
  type DestinationType,
  EXCHANGE_TYPES,
  type ExchangeDeclareOptions,
  type ExchangeInfo,
  type ExchangeType,
} from './types.js';

export type { ExchangeRecord, ExchangesSnapshot } from './snapshot.js';

/** Options of an exchange registry. */
export interface ExchangesOptions {
  /** Virtual host named in error messages (default `/`). */
  vhost?: string;
  /**
   * Whether a destination exists. The default exchange routes a message to the destination its
   * routing key names only when this says it exists (default: every name exists).
   */
  hasDestination?: (destination: string) => boolean;
  /**
   * Called after an exchange was declared, deleted, or gained or lost a binding, so the owner can
   * persist `exchangeToJSON(name)` (which is `undefined` once there is nothing to store).
   */
  onChange?: (exchange: string) => void;
  /**
   * The alternate exchange a policy gives an exchange, followed when its own arguments name none
   * (the argument wins, as in RabbitMQ).
   */
  alternateExchange?: (exchange: string) => string | number | undefined;
  /** Whether a policy makes an exchange delayed, whatever its declaration (LavinMQ's policy). */
  delayedByPolicy?: (exchange: string) => boolean;
}

/**
 * The exchanges of one virtual host and their bindings: declare with RabbitMQ's equivalence
 * rules, bind and unbind queues and exchanges, and route a message to the set of queue names it
 * reaches, through exchange-to-exchange bindings and `alternate-exchange` when an exchange matched
 * nothing. It holds no messages and knows nothing of queues: queue destinations are opaque names.
 *
 * It starts with the default exchange `""` (the routing key names the destination; it cannot be
 * declared, bound or deleted) and `amq.direct`, `amq.fanout`, `amq.topic`, `amq.headers`,
 * `amq.match`. Names starting with `amq.` are reserved.
 */
export class Exchanges {
  readonly #errors: ExchangeErrors;
  readonly #onChange: ((exchange: string) => void) | undefined;
  readonly #delayedByPolicy: (exchange: string) => boolean;
  readonly #exchanges = new Map<string, ExchangeState>();
  readonly #bindings = new BindingIndex();
  readonly #routing: Routing;
  #restoring = false;

  constructor(options: ExchangesOptions = {}) {
    this.#errors = new ExchangeErrors(options.vhost ?? DEFAULT_VHOST);
    this.#onChange = options.onChange;
    this.#delayedByPolicy = options.delayedByPolicy ?? (() => false);
    this.#routing = new Routing(
      this.#exchanges,
      options.hasDestination ?? (() => true),
      options.alternateExchange,
    );
    this.#create(DEFAULT_EXCHANGE, 'direct', true, false, false, {});
    for (const [name, type] of PREDECLARED) this.#create(name, type, true, false, false, {});
  }

  /**
   * Rebuilds a registry from `toJSON()` output (or the `exchangeToJSON` records a MetaStore kept).
   * @param keepDestination bindings to destinations for which this returns false are dropped
   * (e.g. non-durable queues that did not survive the restart).
   */
  static fromJSON(
    snapshot: ExchangesSnapshot,
    options: ExchangesOptions & { keepDestination?: (destination: string) => boolean } = {},
  ): Exchanges {
    const exchanges = new Exchanges(options);
    const keep = options.keepDestination ?? (() => true);
    exchanges.#restoring = true;
    try {
      // Every exchange first: a binding may lead to one stored after its source.
      for (const [name, record] of Object.entries(snapshot)) {
        if (exchanges.#exchanges.has(name)) continue;
        if (!(EXCHANGE_TYPES as readonly string[]).includes(record.type)) {
          throw new TypeError(`stored exchange '${name}' has unknown type '${record.type}'`);
        }
        exchanges.#create(
          name,
          record.type,
          record.durable,
          record.autoDelete,
          record.internal,
          fromJsonTable(record.arguments),
        );
      }
      for (const [name, record] of Object.entries(snapshot)) {
        const state = exchanges.#exchanges.get(name);
        if (!state) continue;
        for (const b of record.bindings) {
          const toExchange = b.destinationType === 'exchange';
          // A binding to an exchange that did not survive (not durable) goes with it.
          if (toExchange ? !exchanges.#exchanges.has(b.destination) : !keep(b.destination)) {
            continue;
          }
          exchanges.#bindings.add(state, {
            destination: destinationKey(b.destination, toExchange ? 'exchange' : 'queue'),
            routingKey: b.routingKey,
            args: Object.freeze(fromJsonTable(b.args)),
          });
        }
        // An auto-delete exchange whose bindings all went with their destinations goes too.
        if (state.autoDelete && state.bindings.size === 0 && record.bindings.length > 0) {
          exchanges.#remove(state);
        }
      }
    } finally {
      exchanges.#restoring = false;
    }
    return exchanges;
  }

  /**
   * Declares an exchange, or checks an existing one: a redeclare must agree on type, `durable`,
   * `autoDelete`, `internal` and `alternate-exchange` (406 naming the first that differs, as
   * RabbitMQ words it; other arguments are not compared, as in RabbitMQ, and the first
   * declaration's stay). `passive` only checks existence (404).
   * @param type `direct`, `fanout`, `topic`, `headers`, `x-consistent-hash` or
   *   `x-delayed-message` (with the argument `x-delayed-type`); anything else is 406
   *   PRECONDITION_FAILED, as RabbitMQ 4.x refuses it.
   * @throws AccessRefusedError for `""` and for new `amq.`-prefixed names (403);
   *   PreconditionFailedError (406) for a missing or unknown `x-delayed-type`.
   */
  declare(name: string, type: string, options: ExchangeDeclareOptions = {}): ExchangeInfo {
    const checked = this.#checked(name, type, options);
    if (checked.existing) return info(checked.existing);
    const { durable, autoDelete, internal, args } = checked;
    const state = this.#create(name, type as ExchangeType, durable, autoDelete, internal, args);
    this.#changed(name);
    return info(state);
  }

  /**
   * Throws what `declare()` with these arguments would throw, and changes nothing: a file of
   * declarations is checked whole before any is made.
   */
  check(name: string, type: string, options: ExchangeDeclareOptions = {}): void {
    this.#checked(name, type, options);
  }

  #checked(name: string, type: string, options: ExchangeDeclareOptions) {
    return checkDeclaration(this.#exchanges, this.#errors, name, type, options);
  }

  /** The exchange of that name, or undefined. */
  get(name: string): ExchangeInfo | undefined {
    const state = this.#exchanges.get(name);
    return state && info(state);
  }

  /** The declared arguments of the exchange of that name (one object for its life), or undefined. */
  argumentsOf(name: string): Readonly<FieldTable> | undefined {
    return this.#exchanges.get(name)?.arguments;
  }

  /** Whether the exchange of that name is a delayed one, by declaration or policy (`delayed.ts`). */
  isDelayed(name: string): boolean {
    const state = this.#exchanges.get(name);
    if (state === undefined) return false;
    // The default exchange and amq.* are never delayed.
    if (state.delayed) return true;
    return name !== DEFAULT_EXCHANGE && !name.startsWith('amq.') && this.#delayedByPolicy(name);
  }

  /** Whether an exchange of that name exists. */
  has(name: string): boolean {
    return this.#exchanges.has(name);
  }

  /** Every exchange, the default one and the predeclared ones included. */
  list(): ExchangeInfo[] {
    return [...this.#exchanges.values()].map(info);
  }

  /**
   * Deletes an exchange and its bindings. A missing exchange is not an error (returns false), as in
   * RabbitMQ 3.10. Exchanges naming it as their `alternate-exchange` keep the name.
   * @param ifUnused refuse (406 "in use") while the exchange has bindings.
   * @throws AccessRefusedError for the default exchange and for every `amq.` name, existing or
   *   not, whatever `ifUnused` (403, as RabbitMQ 3.10 checks the name before looking it up).
   */
  delete(name: string, options: { ifUnused?: boolean } = {}): boolean {
    if (name === DEFAULT_EXCHANGE) throw this.#errors.defaultRefused();
    if (name.startsWith('amq.')) {
      throw new AccessRefusedError(
        `deletion of system ${this.#errors.exchangeText(name)} not allowed`,
      );
    }
    const state = this.#exchanges.get(name);
    if (!state) return false;
    if (options.ifUnused && state.bindings.size > 0) {
      throw new PreconditionFailedError(`${this.#errors.exchangeText(name)} in use`);
    }
    this.#remove(state);
    return true;
  }

  /**
   * Binds a destination to an exchange. Binding twice with the same key and arguments is a no-op
   * (returns false). The caller checks that the destination exists (404 "no queue ...").
   * @throws AccessRefusedError on the default exchange (403), NotFoundError for a missing exchange
   * (404), PreconditionFailedError for an invalid headers `x-match` (406).
   */
  bind(exchange: string, destination: string, routingKey = '', args: FieldTable = {}): boolean {
    checkShortString(destination, 'destination');
    return this.#bind(exchange, destination, routingKey, args);
  }

  /**
   * Binds the exchange `destination` to the exchange `source`, as AMQP's `exchange.bind`: what
   * `source` routes by this binding, `destination` routes on, with the same routing key and
   * headers. Cycles are allowed; a route visits each exchange once. Binding twice is a no-op
   * (returns false).
   * @throws AccessRefusedError (403) when either is the default exchange; NotFoundError (404) when
   *   either is missing; PreconditionFailedError (406) for an invalid headers `x-match`.
   */
  bindExchange(
    destination: string,
    source: string,
    routingKey = '',
    args: FieldTable = {},
  ): boolean {
    return this.#bind(source, this.#exchangeDestination(destination), routingKey, args);
  }

  /**
   * Removes an exchange-to-exchange binding with exactly this key and arguments; a missing one is
   * not an error (returns false). An auto-delete `source` losing its last binding is deleted.
   */
  unbindExchange(
    destination: string,
    source: string,
    routingKey = '',
    args: FieldTable = {},
  ): boolean {
    return this.#unbind(source, this.#exchangeDestination(destination), routingKey, args);
  }

  #bind(exchange: string, key: string, routingKey: string, args: FieldTable): boolean {
    const state = this.#bindable(exchange);
    checkShortString(routingKey, 'routing key');
    const binding: Binding = {
      destination: key,
      routingKey,
      args: Object.freeze(copyArgs(args, 'binding arguments')),
    };
    const added = this.#bindings.add(state, binding);
    if (added) this.#changed(exchange);
    return added;
  }

  /**
   * Removes the binding with exactly this destination, key and arguments; a missing one is not an
   * error (returns false). An auto-delete exchange losing its last binding is deleted.
   */
  unbind(exchange: string, destination: string, routingKey = '', args: FieldTable = {}): boolean {
    return this.#unbind(exchange, destination, routingKey, args);
  }

  #unbind(exchange: string, key: string, routingKey: string, args: FieldTable): boolean {
    const state = this.#bindable(exchange);
    const id = bindingId(key, routingKey, copyArgs(args, 'binding arguments'));
    const binding = state.bindings.get(id);
    if (!binding) return false;
    this.#bindings.remove(state, id, binding);
    this.#afterUnbind(state);
    return true;
  }

  /**
   * Removes every binding to a destination (call it when a queue is deleted). Auto-delete
   * exchanges left without bindings are deleted. Returns how many bindings went.
   */
  removeDestination(destination: string): number {
    return this.#removeDestinationKey(destination);
  }

  #removeDestinationKey(destination: string): number {
    const sources = this.#bindings.sources(destination);
    if (!sources) return 0;
    let removed = 0;
    for (const name of [...sources.keys()]) {
      const state = this.#exchanges.get(name);
      if (!state) continue;
      for (const [id, b] of state.bindings) {
        if (b.destination !== destination) continue;
        this.#bindings.remove(state, id, b);
        removed++;
      }
      this.#afterUnbind(state);
    }
    return removed;
  }

  /** Removes every binding to a queue `gone` says is gone (queues that did not survive a restart). */
  removeQueues(gone: (queue: string) => boolean): void {
    for (const key of [...this.#bindings.destinations()]) {
      if (exchangeOfKey(key) === undefined && gone(key)) this.#removeDestinationKey(key);
    }
  }

  /** The bindings whose source is `exchange` (empty for a missing one and for `""`). */
  bindings(exchange: string): BindingInfo[] {
    return [...(this.#exchanges.get(exchange)?.bindings.values() ?? [])].map(bindingInfo);
  }

  /** Every binding leading to the queue (or exchange) `destination`, with its source exchange. */
  bindingsTo(
    destination: string,
    destinationType: DestinationType = 'queue',
  ): (BindingInfo & { readonly source: string })[] {
    const key = destinationKey(destination, destinationType);
    const out: (BindingInfo & { readonly source: string })[] = [];
    for (const source of this.#bindings.sources(key)?.keys() ?? []) {
      for (const b of this.#exchanges.get(source)?.bindings.values() ?? []) {
        if (b.destination === key) out.push({ source, ...bindingInfo(b) });
      }
    }
    return out;
  }

  /**
   * Checks that a client may publish to an exchange: 404 when it does not exist, 403 when it is
   * internal. `route` itself does not check (dead-lettering to a missing exchange drops silently).
   */
  checkPublish(exchange: string): void {
    const state = this.#exchanges.get(exchange);
    if (!state) throw this.#errors.notFound(exchange);
    if (state.internal) {
      throw new AccessRefusedError(
        `cannot publish to internal ${this.#errors.exchangeText(exchange)}`,
      );
    }
  }

  /**
   * The queues a message reaches, each once. The exchange routes it by each of its routing keys
   * (the key, and those of `CC` and `BCC`); an exchange it reaches through an exchange-to-exchange
   * binding routes it on with the same keys and headers, and an exchange whose bindings matched
   * nothing hands it to its `alternate-exchange`. Each exchange is visited once, so cycles end,
   * as in RabbitMQ. A missing exchange routes nowhere. `properties` are those a consistent-hash
   * exchange's `hash-property` may name.
   */
  route(
    exchange: string,
    routingKeys: string | readonly string[],
    headers?: Readonly<FieldTable>,
    properties?: Readonly<MessageProperties>,
  ): Set<string> {
    return this.#routing.route(exchange, routingKeys, headers, properties);
  }

  /** The persisted form of every durable exchange except `""` (see `exchangeToJSON`). */
  toJSON(): ExchangesSnapshot {
    const out: Record<string, ExchangeRecord> = emptyTable();
    for (const name of this.#exchanges.keys()) {
      const record = this.exchangeToJSON(name);
      if (record) out[name] = record;
    }
    return out;
  }

  /**
   * The persisted form of one exchange, or undefined when there is nothing to store: it does not
   * exist, is not durable, is the default exchange, or is a predeclared one without bindings.
   */
  exchangeToJSON(name: string): ExchangeRecord | undefined {
    const state = this.#exchanges.get(name);
    if (!state?.durable || name === DEFAULT_EXCHANGE) return undefined;
    if (state.bindings.size === 0 && PREDECLARED.some(([n]) => n === name)) return undefined;
    return exchangeRecord(state);
  }

  #create(...declaration: Parameters<typeof newExchangeState>): ExchangeState {
    const state = newExchangeState(...declaration);
    this.#exchanges.set(state.name, state);
    return state;
  }

  #bindable(exchange: string): ExchangeState {
    if (exchange === DEFAULT_EXCHANGE) throw this.#errors.defaultRefused();
    const state = this.#exchanges.get(exchange);
    if (!state) throw this.#errors.notFound(exchange);
    return state;
  }

  /** The destination key of an exchange to bind, checked as RabbitMQ checks it (403, 404). */
  #exchangeDestination(destination: string): string {
    checkShortString(destination, 'destination exchange name');
    this.#bindable(destination);
    return destinationKey(destination, 'exchange');
  }

  /**
   * Deletes an exchange with its bindings, those leading to it included; an auto-delete source
   * left without bindings goes too, as in RabbitMQ.
   */
  #remove(state: ExchangeState): void {
    for (const b of state.bindings.values()) this.#bindings.untrack(b.destination, state.name);
    this.#exchanges.delete(state.name);
    this.#changed(state.name);
    this.#removeDestinationKey(destinationKey(state.name, 'exchange'));
  }

  #afterUnbind(state: ExchangeState): void {
    if (state.autoDelete && state.bindings.size === 0) this.#remove(state);
    else this.#changed(state.name);
  }

  #changed(name: string): void {
    if (!this.#restoring) this.#onChange?.(name);
  }
}
