/**
 * Shapes of the exchange routing model. Exchanges route to opaque destination names (queue names,
 * to the broker); they know nothing of queues, messages or storage.
 */

import type { FieldTable, MessageProperties } from '../message/types.js';

/**
 * The exchange kinds, as AMQP brokers name them (`x-consistent-hash`: LavinMQ, RabbitMQ's plugin;
 * `x-delayed-message`: LavinMQ, RabbitMQ's plugin).
 */
export type ExchangeType =
  | 'direct'
  | 'fanout'
  | 'topic'
  | 'headers'
  | 'x-consistent-hash'
  | 'x-delayed-message';

/** The exchange kinds that route by bindings of their own (what `x-delayed-type` may name). */
export type RoutingType = Exclude<ExchangeType, 'x-delayed-message'>;

/** Every supported exchange type, in a stable order. */
export const EXCHANGE_TYPES: readonly ExchangeType[] = [
  'direct',
  'fanout',
  'topic',
  'headers',
  'x-consistent-hash',
  'x-delayed-message',
];

/** Whether `type` is an exchange type mqlite knows (another is refused with 406). */
export function isExchangeType(type: unknown): type is ExchangeType {
  return (EXCHANGE_TYPES as readonly unknown[]).includes(type);
}

/** A binding from an exchange to a destination. Its identity is all three fields. */
export interface Binding {
  /** Where matching messages go (a queue name, to the broker). */
  readonly destination: string;
  /** The binding key: an exact key (direct), a pattern (topic), ignored by fanout and headers. */
  readonly routingKey: string;
  /** Binding arguments: the header pattern and `x-match` of a headers exchange. */
  readonly args: Readonly<FieldTable>;
}

/** What a binding leads to: a queue, or another exchange (an exchange-to-exchange binding). */
export type DestinationType = 'queue' | 'exchange';

/** A binding as the registry lists it: the name of its destination and what that is. */
export interface BindingInfo extends Binding {
  readonly destinationType: DestinationType;
}

/** Declaration flags and arguments of an exchange, as `exchange.declare` carries them. */
export interface ExchangeDeclareOptions {
  /** Only check that the exchange exists (404 if not); nothing is compared or created. */
  passive?: boolean;
  /** Survives a restart (default true, as `@cloudamqp/amqp-client` declares). */
  durable?: boolean;
  /** Deleted once its last binding is removed (default false). */
  autoDelete?: boolean;
  /** Cannot be published to directly, only reached through other routing (default false). */
  internal?: boolean;
  /** Exchange arguments, e.g. `alternate-exchange`. */
  arguments?: FieldTable;
}

/** A declared exchange, as the registry reports it. */
export interface ExchangeInfo {
  readonly name: string;
  readonly type: ExchangeType;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly arguments: Readonly<FieldTable>;
  /** Number of bindings whose source is this exchange. */
  readonly bindingCount: number;
}

/**
 * The matching strategy of one exchange type. The registry owns binding identity and calls
 * `add`/`remove` once per distinct binding, with its identity key.
 */
export interface ExchangeRouter {
  /** Indexes a new binding. Throws (changing nothing) when its arguments are invalid. */
  add(id: string, binding: Binding): void;
  /** Removes a binding previously added with the same id. */
  remove(id: string, binding: Binding): void;
  /**
   * Adds the destination of every binding that matches to `out`. `properties` are the message's,
   * for a router that hashes one of them (absent when routing needs none).
   */
  route(
    routingKey: string,
    headers: Readonly<FieldTable> | undefined,
    out: Set<string>,
    properties?: Readonly<MessageProperties>,
  ): void;
}
