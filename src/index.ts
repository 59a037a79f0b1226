// The types use Node's (Buffer, AbortSignal): a consumer needs @types/node, not a `types` entry.
/// <reference types="node" preserve="true" />
/**
 * mqlite: the queues of an AMQP broker (streams, priority queues, last-value queues) inside a
 * Node.js process, on memory or on disk, with no broker.
 */

export {
  Broker,
  type BrokerExchange,
  type BrokerOptions,
  type BrokerQueue,
  type BrokerStats,
  type DamagedQueue,
  type DelayedInfo,
  type DeleteQueueOptions,
  type ExchangeOptions,
  type ExchangePublishOptions,
  type ExchangeRef,
  type ExchangeStatus,
  type QueueBindings,
} from './broker/broker.js';
export type { BindingConfig, BrokerConfig, ExchangeConfig, QueueConfig } from './broker/config.js';
export type {
  Declaration as QueueDeclaration,
  QueueDeclareOptions,
  QueueKind,
} from './broker/declare-options.js';
export type {
  BindingDefinition,
  Definitions,
  ExchangeDefinition,
  QueueDefinition,
} from './broker/definitions.js';
export type {
  Policy,
  PolicyDefinition,
  PolicyKey,
  PolicyOptions,
  PolicyTarget,
} from './broker/policies.js';
export type { DeclaredQueue } from './broker/queue-handle.js';
export type { QueueInfo } from './broker/queue-info.js';
export type { AnyQueue, QueueStats } from './broker/queue-kinds.js';
export { BrokerSession } from './broker/session.js';
export {
  type ShovelAckMode,
  type ShovelDefinition,
  ShovelDefinitionError,
} from './broker/shovel-definition.js';
export type {
  ShovelBlockedStatus,
  ShovelParameter,
  ShovelState,
  ShovelStatus,
} from './broker/shovel-host.js';
export type { Clock, TimerHandle } from './clock.js';
export { systemClock } from './clock.js';
export {
  type AlarmEvent,
  CHANNELS,
  type DeadLetterEvent,
  type DeadLetterReason,
  type DropEvent,
  type DropReason,
  type ErrorContext,
  type ErrorEvent,
  type ErrorHandler,
  type ErrorSource,
  type FaultEvent,
  type FaultKind,
  type RecoveryEvent,
  type RetentionEvent,
  type ShovelEvent,
  type UnroutableEvent,
} from './diagnostics.js';
// The error classes and their codes; the helpers that build their messages stay inside.
export {
  AbortedError,
  AccessRefusedError,
  ClosedError,
  ContentTooLargeError,
  CorruptionError,
  type DamageLocation,
  DataLossError,
  type DataLossKind,
  FormatVersionError,
  InvalidConfigError,
  MqliteError,
  type MqliteErrorCode,
  NoRouteError,
  NotFoundError,
  NotImplementedError,
  OffsetClampedError,
  PreconditionFailedError,
  QueueFullError,
  ReplyCode,
  ResourceLockedError,
  StorageError,
  TimeoutError,
} from './errors.js';
export type { DestinationType, ExchangeInfo, ExchangeType } from './exchanges/types.js';
export { Message, type Settlement } from './message/message.js';
export { AmqpTimestamp } from './message/timestamp.js';
export type {
  FieldTable,
  FieldValue,
  MessageProperties,
  PublishBody,
  StoredMessage,
} from './message/types.js';
export type { ClassicArguments, OverflowMode } from './queues/arguments.js';
export type { ClassicQueueOptions } from './queues/classic/classic-options.js';
export { ClassicQueue, type ClassicQueueStats } from './queues/classic/classic-queue.js';
export type { DeadLetterConfirms, DeadLetterRouter } from './queues/classic/dead-letter.js';
export {
  type ConsumerCallback,
  type SubscribeParams,
  Subscription,
} from './queues/consumer.js';
export { type BrowseCallback, Browser } from './queues/lvq/browse.js';
export { LastValueQueue, type LastValueQueueOptions } from './queues/lvq/last-value-queue.js';
export { PriorityQueue, type PriorityQueueOptions, Queue } from './queues/priority-queue.js';
export { QuorumQueue } from './queues/quorum/quorum-queue.js';
export type { MaxAge, MaxAgeUnit, StreamArguments } from './queues/stream/arguments.js';
export { type ReadOptions, type StreamEntry, StreamReader } from './queues/stream/reader.js';
export { StreamQueue, type StreamQueueOptions } from './queues/stream/stream-queue.js';
export {
  type FsIo,
  type FsStorageOptions,
  type FsyncPolicy,
  fsStorage,
} from './storage/fs/index.js';
export { type MemoryStorageOptions, memoryStorage } from './storage/memory.js';
export type * from './storage/types.js';
