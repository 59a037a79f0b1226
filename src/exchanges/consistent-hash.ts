/**
 * The consistent-hash exchange (`x-consistent-hash`), as LavinMQ serves it natively and RabbitMQ
 * through its plugin: each binding's routing key is a weight, and a message goes to the one
 * destination its hash key falls on. The hash key is the routing key, or a header named by
 * `x-hash-on` (LavinMQ) or `hash-header` (RabbitMQ), or a property named by `hash-property`
 * (RabbitMQ). The ring and hash are LavinMQ's (see `consistent-hasher.ts`).
 */
import { PreconditionFailedError } from '../errors.js';
import type { FieldTable, MessageProperties } from '../message/types.js';
import { type ConsistentHasher, type HashAlgorithm, newHasher } from './consistent-hasher.js';
import { exchangeOfKey } from './destination-key.js';
import { describeField } from './field-values.js';
import type { Binding, ExchangeRouter } from './types.js';

/** The properties `hash-property` may name, as RabbitMQ's plugin spells them. */
const HASH_PROPERTIES = {
  message_id: (p) => p.messageId,
  correlation_id: (p) => p.correlationId,
  timestamp: (p) => (p.timestamp ? String(Math.floor(p.timestamp.getTime() / 1000)) : undefined),
} satisfies Record<string, (p: Readonly<MessageProperties>) => string | undefined>;

type HashProperty = keyof typeof HASH_PROPERTIES;

/** What a consistent-hash exchange hashes, read from its arguments. */
export interface HashOptions {
  readonly algorithm: HashAlgorithm;
  /** `x-hash-on`: a header whose value must be a string (LavinMQ). */
  readonly hashOn?: string;
  /** `hash-header`: a header of any value (RabbitMQ). */
  readonly hashHeader?: string;
  readonly hashProperty?: HashProperty;
}

const own = (args: Readonly<FieldTable>, key: string) =>
  Object.hasOwn(args, key) ? args[key] : undefined;

/**
 * Reads and checks a consistent-hash exchange's arguments, with RabbitMQ's plugin's refusals
 * (406); `x-algorithm` and `x-hash-on` that are not strings are ignored, as LavinMQ ignores them.
 */
export function parseHashOptions(args: Readonly<FieldTable>): HashOptions {
  const header = own(args, 'hash-header');
  const property = own(args, 'hash-property');
  if (header !== undefined && property !== undefined) {
    throw new PreconditionFailedError('hash-header and hash-property are mutually exclusive');
  }
  if (header !== undefined && typeof header !== 'string') {
    throw new PreconditionFailedError(
      `hash-header must be a string, not '${describeField(header)}'`,
    );
  }
  if (
    property !== undefined &&
    !(typeof property === 'string' && Object.hasOwn(HASH_PROPERTIES, property))
  ) {
    throw new PreconditionFailedError(`Unsupported property: ${describeField(property)}`);
  }
  const algorithm = own(args, 'x-algorithm');
  const hashOn = own(args, 'x-hash-on');
  return {
    algorithm:
      typeof algorithm === 'string' && algorithm.replaceAll('_', '').toLowerCase() === 'jump'
        ? 'jump'
        : 'ring',
    ...(typeof hashOn === 'string' && { hashOn }),
    ...(typeof header === 'string' && { hashHeader: header }),
    ...(typeof property === 'string' && { hashProperty: property as HashProperty }),
  };
}

const MAX_WEIGHT = 0xffff_ffff;

/** A binding's weight: its routing key as a positive integer, refused as RabbitMQ's plugin does. */
export function bindingWeight(routingKey: string): number {
  if (!/^[+-]?\d+$/.test(routingKey) || Number(routingKey) > MAX_WEIGHT) {
    throw new PreconditionFailedError(
      `The binding key must be an integer: <<${JSON.stringify(routingKey)}>>`,
    );
  }
  const weight = Number(routingKey);
  if (weight < 1) throw new PreconditionFailedError('The binding key must be greater than 0');
  return weight;
}

/**
 * Consistent hashing over the bindings' weights. Bindings are placed and removed as LavinMQ
 * places them, quirks included: a destination bound twice with the same key (different
 * arguments) keeps its place until both are gone.
 */
export class ConsistentHashRouter implements ExchangeRouter {
  readonly #options: HashOptions;
  readonly #hasher: ConsistentHasher<string>;
  /** Bindings per destination and key, so a place goes only with the last of them. */
  readonly #counts = new Map<string, number>();

  constructor(args: Readonly<FieldTable>) {
    this.#options = parseHashOptions(args);
    this.#hasher = newHasher(this.#options.algorithm);
  }

  add(_id: string, binding: Binding): void {
    const weight = bindingWeight(binding.routingKey);
    const pair = `${binding.destination}\u0000${binding.routingKey}`;
    this.#counts.set(pair, (this.#counts.get(pair) ?? 0) + 1);
    this.#hasher.add(nameOf(binding.destination), weight, binding.destination);
  }

  remove(_id: string, binding: Binding): void {
    const pair = `${binding.destination}\u0000${binding.routingKey}`;
    const left = (this.#counts.get(pair) ?? 1) - 1;
    if (left > 0) {
      this.#counts.set(pair, left);
      return;
    }
    this.#counts.delete(pair);
    this.#hasher.remove(nameOf(binding.destination), bindingWeight(binding.routingKey));
  }

  route(
    routingKey: string,
    headers: Readonly<FieldTable> | undefined,
    out: Set<string>,
    properties?: Readonly<MessageProperties>,
  ): void {
    const destination = this.#hasher.get(this.#hashKey(routingKey, headers, properties));
    if (destination !== undefined) out.add(destination);
  }

  #hashKey(
    routingKey: string,
    headers: Readonly<FieldTable> | undefined,
    properties: Readonly<MessageProperties> | undefined,
  ): string {
    const { hashOn, hashHeader, hashProperty } = this.#options;
    if (hashProperty) return (properties && HASH_PROPERTIES[hashProperty](properties)) ?? '';
    const name = hashHeader ?? hashOn;
    if (name === undefined) return routingKey;
    const value = headers && own(headers, name);
    if (value === undefined || value === null || typeof value === 'string') return value ?? '';
    // LavinMQ refuses a publish whose x-hash-on header is not a string; RabbitMQ hashes any value.
    if (hashHeader === undefined)
      throw new PreconditionFailedError('Routing header must be string');
    return describeField(value);
  }
}

/** The name a destination is placed by: a queue's or an exchange's own name. */
function nameOf(destinationKey: string): string {
  return exchangeOfKey(destinationKey) ?? destinationKey;
}
