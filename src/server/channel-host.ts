/**
 * What a channel is given: by its connection (`ChannelHost`: the broker, the output, the backlog,
 * connection exceptions), and by the channel to its parts, its consumers and its publishes
 * (`ChannelContext`: its number, whether it is open, its replies and channel exceptions).
 */
import type { Broker } from '../broker/broker.js';
import type { BrokerSession } from '../broker/session.js';
import type { DueConfirms } from './confirms.js';
import type { AmqpException } from './errors.js';
import type { VhostCounts } from './message-counts.js';
import type { Permissions } from './permissions.js';
import type { ReplyAddresses } from './reply-to.js';
import type { Writer } from './wire/bytes.js';
import type { OutArgs } from './wire/methods.js';
import type { MethodName } from './wire/spec.js';

/** What a channel needs from its connection. */
export interface ChannelHost {
  readonly broker: Broker;
  readonly session: BrokerSession;
  /** What the user may do in the vhost: every method is checked before it runs. */
  readonly permissions: Permissions;
  /** The vhost's message counters; undefined when the server keeps none. */
  readonly counts: VhostCounts | undefined;
  /** The authenticated user name (a publish's `user-id` must match it). */
  readonly user: string;
  /** Negotiated frame-max. */
  readonly frameMax: number;
  /** Largest body a publish may have. */
  readonly maxMessageBytes: number;
  /** The client announced `consumer_cancel_notify`. */
  readonly cancelNotify: boolean;
  /** False while the socket is not draining: deliveries then wait. */
  readonly writable: boolean;
  /** The server's direct reply-to addresses. */
  readonly replies: ReplyAddresses;
  /** The connection's confirms settled and not yet sent: each delivery sends them first. */
  readonly dueConfirms: DueConfirms;
  /** Appends frames to the output. */
  write(build: (w: Writer) => void): void;
  /**
   * The output to append frames to directly, each batch followed by `appended()`; undefined once
   * the connection ended.
   */
  output(): Writer | undefined;
  /** Frames were appended to `output()`: they go out by the end of the turn. */
  appended(): void;
  /**
   * Appending to `output()` threw part-way: what was appended since is dropped (no partial frame
   * goes out) and the connection closes with 541 INTERNAL_ERROR.
   */
  outputFailed(error: unknown): void;
  /** Raises a connection exception. */
  fail(error: AmqpException, classId: number, methodId: number): void;
  /**
   * Counts work waiting for the broker: methods queued behind a slow one, publishes waiting for
   * storage. The connection stops reading its socket while much waits.
   */
  backlog(delta: number): void;
  /** The channel is closed and its number free. */
  released(channel: number): void;
}

/** What the parts of a channel (its consumers, its publishes) need of the channel. */
export interface ChannelContext {
  /** The channel number. */
  readonly id: number;
  readonly host: ChannelHost;
  /** Neither closing nor closed: replies and deliveries still go out. */
  readonly open: boolean;
  /** Sends a method's reply, unless `nowait` or the channel is no longer open. */
  reply<N extends MethodName>(name: N, args: OutArgs<N>, nowait?: boolean): void;
  /** Sends a notification of the server's own, after the reply of the method that caused it. */
  notify(build: (w: Writer) => void): void;
  /** Raises an exception caused by the channel's method `classId.methodId`. */
  exception(error: AmqpException, classId: number, methodId: number): void;
}
