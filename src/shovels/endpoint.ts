/**
 * The two ends of a shovel, whichever broker they are on: a source that delivers messages and
 * takes their acknowledgements, and a destination that takes publishes and resolves each once the
 * broker holds it (a publisher confirm).
 */
import type { ShovelBlockedStatus } from '../broker/shovel-host.js';
import type { MessageProperties } from '../message/types.js';

/** The header a stream queue puts on each delivery: the message's offset in the stream. */
export const OFFSET_HEADER = 'x-stream-offset';

/** A message taken from the source. */
export interface Delivery {
  /** Unique within the source's connection: what `ack`/`nack` name. */
  readonly tag: number;
  readonly exchange: string;
  readonly routingKey: string;
  readonly body: Uint8Array;
  readonly properties: MessageProperties;
  /** Its offset in a stream (its `x-stream-offset`), when the source is a stream queue. */
  readonly offset?: number | undefined;
}

/** Where a shovel takes messages from. */
export interface Source {
  /** Messages ready in the source queue now (undefined when the source cannot tell). */
  pending(): number | undefined;
  /** Starts delivering: at most `prefetch` unacknowledged at once (0: no limit). */
  consume(deliver: (delivery: Delivery) => void): Promise<void>;
  /** Acknowledges `tag`, and with `multiple` every earlier delivery not yet settled too. */
  ack(tag: number, multiple: boolean): Promise<void>;
  /** Gives a delivery back to the queue. */
  requeue(tag: number): Promise<void>;
  /** Stops delivering; what was delivered and not acknowledged goes back to the queue. */
  close(): Promise<void>;
}

/** Where a shovel publishes. */
export interface Destination {
  /**
   * Resolves `true` once the destination holds the message (confirmed), or once sent when
   * `confirm` is off; `false` when the destination refused it (a `basic.nack`: a full queue with
   * `x-overflow: reject-publish`).
   */
  publish(
    exchange: string,
    routingKey: string,
    body: Uint8Array,
    properties: MessageProperties,
  ): Promise<boolean>;
  /** Whether it takes publishes now (`blocked`: they wait; `flow`: they queue in the socket). */
  blockedStatus(): ShovelBlockedStatus;
  /** Publishes waiting, not sent, until the destination broker unblocks the connection. */
  held(): number;
  close(): Promise<void>;
}

/** How an end tells its shovel that its link failed (a dropped connection, a closed channel). */
export type OnFailure = (error: unknown) => void;

/** Where the source consumes: a queue, or an exchange through a queue of its own. */
export interface SourceSpec {
  readonly queue?: string | undefined;
  readonly queueArgs?: Readonly<Record<string, unknown>> | undefined;
  readonly exchange?: string | undefined;
  readonly exchangeKey: string;
  readonly consumerArgs?: Readonly<Record<string, unknown>> | undefined;
  readonly prefetch: number;
  readonly noAck: boolean;
}

/** The queue a destination declares when missing (`dest-queue`), with its arguments. */
export interface DestinationSpec {
  readonly queue?: string | undefined;
  readonly queueArgs?: Readonly<Record<string, unknown>> | undefined;
  /** Publish with confirms (`on-confirm`). */
  readonly confirm: boolean;
}
