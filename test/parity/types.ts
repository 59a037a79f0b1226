/**
 * The surface the parity scenarios are written against: `AMQPSessionLike` of
 * `@cloudamqp/amqp-client`, plus the few calls the real `AMQPQueue`/`AMQPExchange` have and the
 * narrow interface lacks (delete, purge, unbind), which every target must offer too.
 */

import type {
  AMQPExchangeLike,
  AMQPQueueLike,
  AMQPSessionLike,
  ExchangeOptions,
  QueueOptions,
} from '@cloudamqp/amqp-client';

/** `direct`, `fanout`, `topic`, `headers` (or a plugin's type, on a broker that has it). */
export type ExchangeType = Parameters<AMQPSessionLike['exchange']>[1];

/** A queue handle: `AMQPQueueLike` plus what cleanup and some scenarios need. */
export interface ParityQueue extends AMQPQueueLike {
  unbind(exchange: string, routingKey?: string, args?: Record<string, unknown>): Promise<unknown>;
  purge(): Promise<unknown>;
  delete(params?: { ifUnused?: boolean; ifEmpty?: boolean }): Promise<unknown>;
}

/** An exchange handle: `AMQPExchangeLike` plus its name, exchange bindings and `delete`. */
export interface ParityExchange extends AMQPExchangeLike {
  readonly name: string;
  bind(source: string, routingKey?: string, args?: Record<string, unknown>): Promise<unknown>;
  unbind(source: string, routingKey?: string, args?: Record<string, unknown>): Promise<unknown>;
  delete(params?: { ifUnused?: boolean }): Promise<unknown>;
}

/** `AMQPSessionLike` whose handles are the richer ones above. */
export interface ParitySession
  extends Omit<
    AMQPSessionLike,
    'queue' | 'exchange' | 'directExchange' | 'fanoutExchange' | 'topicExchange' | 'headersExchange'
  > {
  queue(name: string, options?: QueueOptions): Promise<ParityQueue>;
  exchange(name: string, type: ExchangeType, options?: ExchangeOptions): Promise<ParityExchange>;
}

/**
 * The deliberate differences between targets, each documented in the README ("Differences from
 * the brokers"). Scenarios that touch one assert the target's expectation through these fields.
 */
export interface TargetBehaviour {
  /**
   * Whether `subscription.cancel()` returns the subscription's unacked messages to the queue.
   * `@cloudamqp/amqp-client` closes the subscription's channel on cancel, so they come back
   * redelivered; mqlite's cancel is a basic.cancel that leaves them settleable (closing the
   * session returns them).
   */
  readonly cancelRequeuesUnacked: boolean;
  /**
   * The dead-letter reason of a message dropped by `x-max-length-bytes`: RabbitMQ 3.10 writes
   * `maxlen`, mqlite writes `maxlenbytes`.
   */
  readonly maxLengthBytesReason: 'maxlen' | 'maxlenbytes';
  /**
   * Whether every delivery of a classic queue carries `x-delivery-count` (mqlite; RabbitMQ 3.10
   * writes it on quorum queues only).
   */
  readonly deliveryCountHeader: boolean;
  /**
   * Whether a 540 NOT_IMPLEMENTED (basic.get on a stream) closes the connection, as AMQP makes it
   * a connection error (RabbitMQ); mqlite rejects the call alone and the session goes on.
   */
  readonly notImplementedClosesConnection: boolean;
  /**
   * Whether `multiple` on a pulled (`get`) delivery settles the unsettled deliveries of every
   * queue pulled from on the connection (RabbitMQ: one channel's delivery tags), or only those of
   * the same queue (mqlite, where delivery tags belong to a queue's `get` or a subscription).
   */
  readonly multipleSpansQueues: boolean;
  /**
   * Whether an exchange declare of an unknown type closes the connection with 503 COMMAND_INVALID
   * (RabbitMQ 3.10) rather than the channel with 406 PRECONDITION_FAILED (RabbitMQ 4.x, LavinMQ,
   * mqlite).
   */
  readonly unknownExchangeTypeClosesConnection: boolean;
  /**
   * Whose delivery limits quorum queues follow: RabbitMQ 4.x's (mqlite: 20 by default, `-1` for
   * none) or 3.10's (no limit by default; `-1` dead-letters at the first return).
   */
  readonly quorumRules: '3.10' | '4.x';
}

/** What a scenario gets besides the session: throwaway names, cleanup, waits, translations. */
export interface ParityContext {
  /** The target's name (`rabbitmq`, `mqlite`, ...). */
  readonly target: string;
  /** Where the target differs on purpose. */
  readonly behaviour: TargetBehaviour;
  /** A name unique to this run, `parity-<random>-<suffix>`, so runs never collide. */
  name(suffix: string): string;
  /** Declares a queue under a throwaway name; it is deleted after the scenario, even on failure. */
  queue(suffix: string, options?: QueueOptions): Promise<ParityQueue>;
  /** Declares an exchange under a throwaway name; deleted after the scenario, even on failure. */
  exchange(suffix: string, type: ExchangeType, options?: ExchangeOptions): Promise<ParityExchange>;
  /**
   * The target's offset for the n-th message of a stream (n counted from 1, as mqlite and
   * LavinMQ count; RabbitMQ counts from 0).
   */
  streamOffset(n: number): number;
  /** Lets `ms` of broker time pass: a real sleep on a broker, a clock advance in process. */
  elapse(ms: number): Promise<void>;
  /**
   * Runs a `mandatory: true` publish that matches no queue and checks that the target reports it
   * unroutable: a real broker returns it (basic.return), mqlite rejects it with 312 NO_ROUTE.
   */
  expectUnroutable(publish: () => Promise<unknown>): Promise<void>;
  /**
   * Opens another connection to the same broker (on mqlite a `broker.session()`), for a consumer
   * whose connection goes away; stopped after the scenario if it is still open.
   */
  connection(): Promise<ParitySession>;
  /**
   * Sets a policy under a throwaway name (`rabbitmqctl set_policy` on RabbitMQ, `setPolicy` on
   * mqlite); it is cleared after the scenario, even on failure. Only on `POLICY_TARGETS`.
   */
  policy(suffix: string, options: ParityPolicy): Promise<string>;
  /** Clears a policy `policy()` set. */
  clearPolicy(name: string): Promise<void>;
  /**
   * Deletes an exchange by name, with no handle to it (a name no declare accepts has none); the
   * broker's refusal rejects the promise, as a handle's `delete()` would.
   */
  deleteExchange(name: string, params?: { ifUnused?: boolean }): Promise<void>;
}

/** A policy as `broker.setPolicy()` takes it. */
export interface ParityPolicy {
  readonly pattern: string;
  readonly applyTo?: 'queues' | 'exchanges' | 'all';
  readonly priority?: number;
  readonly definition: Readonly<Record<string, string | number>>;
}

/** One behaviour, written once, run against every target. */
export interface Scenario {
  /** What a user sees, e.g. "a priority queue delivers higher priorities first". */
  readonly name: string;
  /**
   * Restricts the scenario to some targets, with the reason shown in the test name of the others
   * (e.g. mqlite follows LavinMQ on purpose where RabbitMQ differs). Never used to hide a bug.
   */
  readonly only?: { readonly targets: readonly string[]; readonly reason: string };
  /**
   * Targets where the broker itself differs from the one the scenario follows (LavinMQ from
   * RabbitMQ), by target name, with what differs: the scenario is listed as skipped there.
   */
  readonly differsOn?: Readonly<Record<string, string>>;
  run(session: ParitySession, ctx: ParityContext): Promise<void>;
}
