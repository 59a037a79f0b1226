/**
 * mqlite: the queues of an AMQP broker (streams, priority queues, last-value queues) inside a
 * Node.js process, on memory or on disk, with no broker.
 */

export type { Clock, TimerHandle } from './clock.js';
export { systemClock } from './clock.js';
export * from './errors.js';
export { Message, type Settlement } from './message/message.js';
export type {
  FieldTable,
  FieldValue,
  MessageProperties,
  PublishBody,
  StoredMessage,
} from './message/types.js';
export {
  type ConsumerCallback,
  type SubscribeParams,
  Subscription,
} from './queues/consumer.js';
export type * from './storage/types.js';
