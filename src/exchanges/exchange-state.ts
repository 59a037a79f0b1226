/** An exchange as the registry holds it: its declaration, its router and its bindings. */
import type { FieldTable } from '../message/types.js';
import { ConsistentHashRouter } from './consistent-hash.js';
import { exchangeRouting } from './delayed.js';
import { DirectRouter } from './direct.js';
import { FanoutRouter } from './fanout.js';
import { HeadersRouter } from './headers.js';
import { TopicRouter } from './topic.js';
import type { Binding, ExchangeInfo, ExchangeRouter, ExchangeType, RoutingType } from './types.js';

export interface ExchangeState extends Omit<ExchangeInfo, 'bindingCount'> {
  /** The type whose routing it uses: `type`, or the `x-delayed-type` of a delayed exchange. */
  readonly routingType: RoutingType;
  /** Whether it holds messages with an `x-delay` header until they are due. */
  readonly delayed: boolean;
  readonly router: ExchangeRouter;
  /** Bindings by identity key (destination key, routing key, arguments). */
  readonly bindings: Map<string, Binding>;
  /** How many of them lead to an exchange: none lets a route skip the walk. */
  exchangeBindings: number;
}

export const DEFAULT_EXCHANGE = '';

/** The exchanges every virtual host starts with, as RabbitMQ predeclares them (all durable). */
export const PREDECLARED: readonly [string, ExchangeType][] = [
  ['amq.direct', 'direct'],
  ['amq.fanout', 'fanout'],
  ['amq.topic', 'topic'],
  ['amq.headers', 'headers'],
  ['amq.match', 'headers'],
];

const routers: Record<RoutingType, (args: Readonly<FieldTable>) => ExchangeRouter> = {
  direct: () => new DirectRouter(),
  fanout: () => new FanoutRouter(),
  topic: () => new TopicRouter(),
  headers: () => new HeadersRouter(),
  'x-consistent-hash': (args) => new ConsistentHashRouter(args),
};

/** A new exchange without bindings, with the router of its type (checked before). */
export function newExchangeState(
  name: string,
  type: ExchangeType,
  durable: boolean,
  autoDelete: boolean,
  internal: boolean,
  args: FieldTable,
): ExchangeState {
  const { routingType, delayed } = exchangeRouting(type, args);
  return {
    name,
    type,
    routingType,
    delayed,
    durable,
    autoDelete,
    internal,
    arguments: Object.freeze(args),
    router: routers[routingType](args),
    bindings: new Map(),
    exchangeBindings: 0,
  };
}

export function info(state: ExchangeState): ExchangeInfo {
  return {
    name: state.name,
    type: state.type,
    durable: state.durable,
    autoDelete: state.autoDelete,
    internal: state.internal,
    arguments: state.arguments,
    bindingCount: state.bindings.size,
  };
}
