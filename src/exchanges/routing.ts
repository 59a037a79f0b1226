/**
 * Routing a message through a registry's exchanges: each exchange's own bindings by every routing
 * key, exchange-to-exchange bindings walked with each exchange visited once, and the
 * `alternate-exchange` of an exchange that matched nothing.
 */
import type { FieldTable, MessageProperties } from '../message/types.js';
import { alternateOf } from './alternate-exchange.js';
import { destinationKey, exchangeOfKey } from './destination-key.js';
import { DEFAULT_EXCHANGE, type ExchangeState } from './exchange-state.js';

export class Routing {
  readonly #exchanges: ReadonlyMap<string, ExchangeState>;
  readonly #hasDestination: (destination: string) => boolean;
  readonly #policyAlternate: ((exchange: string) => string | number | undefined) | undefined;

  constructor(
    exchanges: ReadonlyMap<string, ExchangeState>,
    hasDestination: (destination: string) => boolean,
    policyAlternate: ((exchange: string) => string | number | undefined) | undefined,
  ) {
    this.#exchanges = exchanges;
    this.#hasDestination = hasDestination;
    this.#policyAlternate = policyAlternate;
  }

  /** The queues a message reaches, each once (see `Exchanges.route`). */
  route(
    exchange: string,
    routingKeys: string | readonly string[],
    headers?: Readonly<FieldTable>,
    properties?: Readonly<MessageProperties>,
  ): Set<string> {
    const out = new Set<string>();
    if (exchange === DEFAULT_EXCHANGE) {
      if (typeof routingKeys === 'string') {
        if (this.#hasDestination(routingKeys)) out.add(routingKeys);
      } else for (const key of routingKeys) if (this.#hasDestination(key)) out.add(key);
      return out;
    }
    const first = this.#exchanges.get(exchange);
    if (!first) return out;
    // The common case, an exchange bound to queues only that matched some: no walk.
    if (first.exchangeBindings === 0) {
      match(first, routingKeys, headers, properties, out);
      if (out.size > 0 || typeof this.#alternateOf(first) !== 'string') return out;
    }
    const seen = new Set([first.name]);
    const work = [first];
    for (let state = work.pop(); state; state = work.pop()) {
      const matched = new Set<string>();
      match(state, routingKeys, headers, properties, matched);
      const alternate = this.#alternateOf(state);
      if (matched.size === 0 && typeof alternate === 'string') {
        matched.add(destinationKey(alternate, 'exchange'));
      }
      for (const key of matched) {
        const name = exchangeOfKey(key);
        if (name === undefined) out.add(key);
        else if (!seen.has(name)) {
          seen.add(name);
          const next = this.#exchanges.get(name);
          if (next) work.push(next);
        }
      }
    }
    return out;
  }

  #alternateOf(state: ExchangeState): unknown {
    return alternateOf(state, this.#policyAlternate);
  }
}

/** Adds what the exchange's own bindings match, by any of the keys, to `out`. */
function match(
  state: ExchangeState,
  routingKeys: string | readonly string[],
  headers: Readonly<FieldTable> | undefined,
  properties: Readonly<MessageProperties> | undefined,
  out: Set<string>,
): void {
  if (typeof routingKeys === 'string') state.router.route(routingKeys, headers, out, properties);
  else for (const key of routingKeys) state.router.route(key, headers, out, properties);
}
