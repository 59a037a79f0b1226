/**
 * Diagnostics: what queues and storage do that no caller awaits, published on named
 * `node:diagnostics_channel` channels, and the reporting of errors nobody awaits. Every floor may
 * import this module; it imports nothing of them but types. A channel nobody subscribes to costs
 * a property read: payloads are built only when `hasSubscribers` is true.
 *
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * subscribe('mqlite:drop', (event) => console.log(event));
 * ```
 */
import { channel } from 'node:diagnostics_channel';
import { ClosedError } from './errors.js';
import type { StoredMessage } from './message/types.js';

/** Why a message was dead-lettered, as the `x-death` header words it. */
export type DeadLetterReason = 'rejected' | 'expired' | 'maxlen' | 'maxlenbytes' | 'delivery_limit';

/** Payload of `mqlite:dead-letter`: a queue sent a message to its dead-letter exchange. */
export interface DeadLetterEvent {
  /** The queue the message left. */
  readonly queue: string;
  readonly reason: DeadLetterReason;
  /** The dead-letter exchange (`''`: the default exchange). */
  readonly exchange: string;
  /** The routing key it is routed by. */
  readonly routingKey: string;
  /** The dead-lettered copy, `x-death` header included. */
  readonly message: StoredMessage;
}

/** Why a queue discarded a message by a rule of its own. */
export type DropReason =
  /** Its TTL passed (`x-message-ttl` or `expiration`). */
  | 'expired'
  /** `x-overflow: drop-head` removed it from the head to stay within `x-max-length`. */
  | 'maxlen'
  /** As `maxlen`, for `x-max-length-bytes`. */
  | 'maxlenbytes'
  /** `x-overflow: reject-publish` or `reject-publish-dlx` refused it: it was never stored. */
  | 'overflow'
  /** It was requeued more often than `x-delivery-limit`. */
  | 'delivery_limit';

/** Payload of `mqlite:drop`: a queue discarded a message (overflow, TTL, delivery limit). */
export interface DropEvent {
  readonly queue: string;
  readonly reason: DropReason;
  readonly message: StoredMessage;
  /** It goes on to the queue's dead-letter exchange (a `mqlite:dead-letter` event follows). */
  readonly deadLettered: boolean;
}

/**
 * Payload of `mqlite:unroutable`: a publish that no binding (nor an alternate exchange) routed to
 * a queue, dropped as brokers drop it (not `mandatory`: a mandatory one is refused with 312).
 */
export interface UnroutableEvent {
  /** The exchange it was published to (`''`: the default exchange). */
  readonly exchange: string;
  readonly routingKey: string;
  readonly message: StoredMessage;
}

/** Payload of `mqlite:retention`: a stream dropped segments from its head. */
export interface RetentionEvent {
  /** The stream. */
  readonly queue: string;
  /** `'retention'`: `x-max-age`, `x-max-length` or `x-max-length-bytes`; `'purge'`: a purge. */
  readonly cause: 'retention' | 'purge';
  /** Messages dropped. */
  readonly messages: number;
  /** Offset of the oldest message left. */
  readonly firstOffset: number;
}

/**
 * Payload of `mqlite:recovery`: storage found bytes on disk it could not use as they were and
 * did something about them (reopening after a crash cuts a torn tail).
 */
export interface RecoveryEvent {
  /** The file, as the storage names it. */
  readonly file: string;
  /** Byte position in the file where the unusable bytes start. */
  readonly position: number;
  /** Records (frames) begun in those bytes; a partial frame header counts as one. */
  readonly records: number;
  /** How many bytes. */
  readonly bytes: number;
  /** What was wrong with the first of them: `'is cut short'`, `'fails its checksum'`, ... */
  readonly reason: string;
  /** What was done: `'cut'` (the file was truncated at `position`). */
  readonly action: string;
}

/**
 * Payload of `mqlite:alarm`: one of the AMQP server's resource alarms went on or off (see
 * `listen()`'s `memory` and `disk`): while one is on, publishing connections are blocked.
 */
export type AlarmEvent =
  | {
      readonly resource: 'memory';
      /** True when the alarm went on, false when it cleared. */
      readonly raised: boolean;
      /** Bytes in use at the reading that changed it. */
      readonly used: number;
      /** The high watermark, in bytes. */
      readonly limit: number;
    }
  | {
      readonly resource: 'disk';
      /** True when the alarm went on, false when it cleared. */
      readonly raised: boolean;
      /** Bytes free at the reading that changed it. */
      readonly free: number;
      /** The free space limit, in bytes. */
      readonly limit: number;
    };

/** A fault a test injected into a served broker (`mqlite/testing/server`). */
export type FaultKind =
  /** A connection closed by the server: connection.close 320 CONNECTION_FORCED. */
  | 'close'
  /** A connection's socket destroyed, no close frame sent. */
  | 'drop'
  /** A connection attempt refused (`detail`: `reset`, or the reply code of the close). */
  | 'refuse'
  /** A channel closed by the server with an error (`detail`: its reply text). */
  | 'close-channel'
  /** Every frame to a connection delayed on the clock (`detail`: by how long). */
  | 'delay'
  /** A connection no longer read nor written to, so the client's heartbeat check fires. */
  | 'stall'
  /** Publishers blocked as under the memory alarm (`connection.blocked`). */
  | 'block'
  /** The block lifted (`connection.unblocked`), unless memory is over the watermark. */
  | 'unblock'
  /** The broker closed and reopened on its storage and port. */
  | 'restart';

/** Payload of `mqlite:fault`: a fault was injected; one event per connection it hit. */
export interface FaultEvent {
  readonly fault: FaultKind;
  /** The connection's client address and port, when the fault hit one. */
  readonly peer?: string;
  /** The connection's client-provided name (`connection_name`), when it gave one. */
  readonly name?: string;
  /** The reply code and text, or how an attempt was refused. */
  readonly detail?: string;
}

/** Where an error nobody awaits came from. */
export type ErrorSource =
  /** A consumer's callback threw or its promise rejected. */
  | 'consumer'
  /** A last-value queue browser's callback threw or its promise rejected. */
  | 'browser'
  /** A dead-lettered copy could not be routed or stored. */
  | 'dead-letter'
  /** A delayed exchange opening its stored messages, or routing one that fell due. */
  | 'delayed'
  /** Message TTL expiry, run on the clock. */
  | 'expiry'
  /** A queue deleting itself (`x-expires`, auto-delete). */
  | 'queue-delete'
  /** Delivering requeued messages, run on a later turn. */
  | 'dispatch'
  /** A stream's retention, run on the clock or after a publish. */
  | 'retention'
  /** The broker writing its declarations. */
  | 'registry'
  /** Storage rewriting a segment in the background. */
  | 'compaction'
  /** Stored data found damaged, cut, restored or moved past on open (see `broker.damaged()`). */
  | 'storage';

/** Payload of `mqlite:shovel`: a shovel changed state. */
export interface ShovelEvent {
  readonly name: string;
  readonly vhost: string;
  /** `starting`, `running`, `terminated` (with `reason`), or `deleted` (its `src-delete-after` reached). */
  readonly state: 'starting' | 'running' | 'terminated' | 'deleted';
  /** Why it terminated, its URIs' passwords masked. */
  readonly reason?: string;
}

/** What `onError` is told about an error besides the error itself. */
export interface ErrorContext {
  readonly source: ErrorSource;
  /** The queue it concerns, when one does. */
  readonly queue?: string;
  /** The consumer (or browser) it concerns, when one does. */
  readonly consumerTag?: string;
}

/** Payload of `mqlite:error`: every error nobody awaits, whether or not an `onError` is set. */
export interface ErrorEvent extends ErrorContext {
  readonly error: unknown;
}

/** Receives errors no caller awaits. */
export type ErrorHandler = (error: unknown, context: ErrorContext) => void;

/** The channels, by name. */
export const CHANNELS = {
  deadLetter: 'mqlite:dead-letter',
  drop: 'mqlite:drop',
  unroutable: 'mqlite:unroutable',
  retention: 'mqlite:retention',
  recovery: 'mqlite:recovery',
  error: 'mqlite:error',
  alarm: 'mqlite:alarm',
  fault: 'mqlite:fault',
  shovel: 'mqlite:shovel',
} as const;

/** `mqlite:dead-letter`, carrying {@link DeadLetterEvent}. */
export const deadLetterChannel = channel(CHANNELS.deadLetter);
/** `mqlite:drop`, carrying {@link DropEvent}. */
export const dropChannel = channel(CHANNELS.drop);
/** `mqlite:unroutable`, carrying {@link UnroutableEvent}. */
export const unroutableChannel = channel(CHANNELS.unroutable);
/** `mqlite:retention`, carrying {@link RetentionEvent}. */
export const retentionChannel = channel(CHANNELS.retention);
/** `mqlite:recovery`, carrying {@link RecoveryEvent}. */
export const recoveryChannel = channel(CHANNELS.recovery);
/** `mqlite:error`, carrying {@link ErrorEvent}. */
export const errorChannel = channel(CHANNELS.error);
/** `mqlite:alarm`, carrying {@link AlarmEvent}. */
export const alarmChannel = channel(CHANNELS.alarm);

/** `mqlite:fault`, carrying {@link FaultEvent}. */
export const faultChannel = channel(CHANNELS.fault);
/** `mqlite:shovel`, carrying {@link ShovelEvent}. */
export const shovelChannel = channel(CHANNELS.shovel);

/**
 * Reports an error nobody awaits: on `mqlite:error`, then to `handler`. A handler that throws
 * does not break the queue that reported: its error is rethrown on a later turn, as an uncaught
 * exception, the way a throwing `'error'` listener surfaces.
 */
export function reportError(
  handler: ErrorHandler,
  error: unknown,
  source: ErrorSource,
  queue?: string,
  consumerTag?: string,
): void {
  const context: ErrorContext = {
    source,
    ...(queue !== undefined && { queue }),
    ...(consumerTag !== undefined && { consumerTag }),
  };
  if (errorChannel.hasSubscribers) errorChannel.publish({ error, ...context } as ErrorEvent);
  try {
    handler(error, context);
  } catch (thrown) {
    queueMicrotask(() => {
      throw thrown;
    });
  }
}

/**
 * The default handler: a process warning naming the source and queue. A queue closed under a
 * pending background task is the expected end of that task, not worth a warning.
 */
export function warnOnError(error: unknown, context: ErrorContext): void {
  if (error instanceof ClosedError) return;
  const where = context.queue === undefined ? '' : ` on queue '${context.queue}'`;
  const warning = error instanceof Error ? error : new Error(String(error));
  process.emitWarning(warning, {
    type: 'MqliteWarning',
    detail: `reported by mqlite (${context.source}${where})`,
  });
}
