/**
 * What a broker and its shovel runner (`src/shovels/`, loaded by dynamic import) say to each
 * other: the runner's calls, the few calls a shovel makes on its own broker, and a shovel's state.
 */

import type { Clock } from '../clock.js';
import type { PublishBody } from '../message/types.js';
import type { QueueDeclareOptions } from './declare-options.js';
import type { ExchangePublishOptions } from './exchange-handle.js';
import type { BrokerQueue } from './queue-handle.js';
import type { BrokerSession } from './session.js';
import type { ShovelDefinition } from './shovel-definition.js';

/** A shovel's state, as RabbitMQ's `rabbitmqctl shovel_status` names it. */
export type ShovelState = 'starting' | 'running' | 'terminated';

/**
 * Whether a running shovel's destination takes its messages, as RabbitMQ 4.x reports it:
 * `blocked` while the destination broker has the connection blocked (`connection.blocked`, a
 * resource alarm), `flow` while the connection's socket is not draining, `running` otherwise.
 */
export type ShovelBlockedStatus = 'running' | 'flow' | 'blocked';

/** A shovel as `broker.shovels()` lists it. URIs are shown with their password masked. */
export interface ShovelStatus {
  readonly name: string;
  readonly vhost: string;
  /** Always `dynamic`: set by the API, a definitions file or `mqlite serve`. */
  readonly type: 'dynamic';
  readonly state: ShovelState;
  /** When it entered that state, in milliseconds on the broker's clock. */
  readonly since: number;
  /** Why it terminated (it tries again after `reconnect-delay`, unless that is 0). */
  readonly reason?: string;
  /** The source URI in use (password masked), `amqp://` for this broker. */
  readonly source: string;
  readonly destination: string;
  /**
   * Messages the destination took (confirmed under `on-confirm`) since the shovel started. Not
   * the management API's `forwarded`, which counts publishes as RabbitMQ 4.x does: that is
   * `published`.
   */
  readonly forwarded: number;
  /** Messages published and not yet confirmed by the destination. */
  readonly inFlight: number;
  /**
   * Messages waiting in a source queue of this broker; undefined for a remote source. Not the
   * management API's `pending` (messages held while the destination is blocked): that is `held`.
   */
  readonly pending: number | undefined;
  /**
   * Whether the destination takes messages now, while `state` is `running` (undefined in the
   * other states): what the management API shows as a running shovel's `state` and
   * `blocked_status`, as RabbitMQ 4.x does.
   */
  readonly blockedStatus: ShovelBlockedStatus | undefined;
  /**
   * Messages published to the destination since the shovel started, confirmed or not: the
   * management API's `forwarded`, counted as RabbitMQ 4.x counts it.
   */
  readonly published: number;
  /**
   * Messages taken from the source and held, not published, while the destination is blocked:
   * the management API's `pending`.
   */
  readonly held: number;
  /**
   * Messages still to move before `src-delete-after` deletes the shovel (counted once the
   * destination took them, or once published under `on-publish` and `no-ack`); `'unlimited'`
   * without `src-delete-after`; undefined until known (`queue-length` is read as the shovel first
   * starts). The management API's `remaining`.
   */
  readonly remaining: number | 'unlimited' | undefined;
  /**
   * Messages still to publish before `src-delete-after` is reached (counted once published, held
   * ones not yet); `'unlimited'` without it, undefined until known. The management API's
   * `remaining_unacked`.
   */
  readonly remainingUnacked: number | 'unlimited' | undefined;
}

/** The calls a shovel makes on the broker it runs in. */
export interface LocalBroker {
  readonly vhost: string;
  queue(name: string, options?: QueueDeclareOptions): Promise<BrokerQueue>;
  publish(exchange: string, body: PublishBody, options?: ExchangePublishOptions): Promise<void>;
  session(): BrokerSession;
}

/** What the shovel runner is given. */
export interface ShovelHost {
  readonly broker: LocalBroker;
  readonly clock: Clock;
  /** A shovel reached its `src-delete-after`: its definition is deleted, as RabbitMQ does. */
  finished(name: string): void;
  /**
   * Where the shovel's stream source resumes (an `x-stream-offset`), stored with the broker's
   * storage; undefined when it stored none (a source that is not a stream, or never acked).
   */
  position(name: string): number | undefined;
  /** Stores where it resumes: the offset after the last message it acknowledged at the source. */
  savePosition(name: string, offset: number): void;
}

/** The runner of a broker's shovels (`src/shovels/runner.ts`). */
export interface ShovelRunner {
  /** Starts a shovel, replacing a running one of that name. */
  start(name: string, definition: ShovelDefinition): Promise<void>;
  stop(name: string): Promise<void>;
  status(name: string): ShovelStatus | undefined;
  close(): Promise<void>;
}

/** A shovel's definition as a definitions file lists it (`parameters`). */
export interface ShovelParameter {
  readonly vhost: string;
  readonly component: 'shovel';
  readonly name: string;
  readonly value: ShovelDefinition;
}
