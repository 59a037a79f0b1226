/** Exchanges and bindings: the routing model, knowing nothing of queues or storage. */
export { DirectRouter } from './direct.js';
export { FanoutRouter } from './fanout.js';
export { type HeadersMatch, HeadersRouter } from './headers.js';
export {
  type ExchangeRecord,
  Exchanges,
  type ExchangesOptions,
  type ExchangesSnapshot,
} from './registry.js';
export { TopicRouter, topicWords } from './topic.js';
export {
  type Binding,
  type BindingInfo,
  type DestinationType,
  EXCHANGE_TYPES,
  type ExchangeDeclareOptions,
  type ExchangeInfo,
  type ExchangeRouter,
  type ExchangeType,
} from './types.js';
