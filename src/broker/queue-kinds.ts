/**
 * How the broker validates and opens each queue kind. Every kind is constructible on its own;
 * this table is the one place that knows their factories, so the Broker stays kind-agnostic.
 */
import type { Clock } from '../clock.js';
import type { ErrorHandler } from '../diagnostics.js';
import { type DataLossError, queueResource } from '../errors.js';
import { DEDUPLICATION_ARGUMENTS, deduplicationOptions } from '../exchanges/deduplication.js';
import type { FieldTable } from '../message/types.js';
import { CLASSIC_ARGUMENTS, parseClassicArguments } from '../queues/arguments.js';
import type { ClassicQueueOptions } from '../queues/classic/classic-options.js';
import type { DeadLetterRouter } from '../queues/classic/dead-letter.js';
import { LVQ_ARGUMENTS, parseLvqDeclaration } from '../queues/lvq/arguments.js';
import { LastValueQueue } from '../queues/lvq/last-value-queue.js';
import { PriorityQueue, Queue } from '../queues/priority-queue.js';
import {
  checkQuorumFlags,
  parseQuorumArguments,
  QUORUM_ARGUMENTS,
} from '../queues/quorum/arguments.js';
import { QuorumQueue } from '../queues/quorum/quorum-queue.js';
import { parseStreamArguments, STREAM_ARGUMENTS } from '../queues/stream/arguments.js';
import { StreamQueue } from '../queues/stream/stream-queue.js';
import type { StorageAdapter } from '../storage/types.js';
import type { Declaration, QueueKind } from './declare-options.js';

/** The handles `broker.queue()` returns, one class per kind. */
export type AnyQueue = Queue | PriorityQueue | LastValueQueue | QuorumQueue | StreamQueue;

/** Statistics of one queue, as `broker.queues()` lists them. */
export interface QueueStats {
  /** Messages held: ready plus unacknowledged (a stream: retained). */
  readonly messages: number;
  /** Messages ready for delivery (a stream: retained). */
  readonly messagesReady: number;
  /** Messages delivered and not yet acknowledged (a stream: 0, it removes nothing on ack). */
  readonly messagesUnacknowledged: number;
  /** Body bytes of the messages held (a stream: stored bytes). */
  readonly bytes: number;
  readonly consumers: number;
}

/** What a kind is opened with besides its declaration. */
export interface KindContext {
  readonly storage: StorageAdapter;
  /** The queue's storage namespace. */
  readonly namespace: string;
  readonly clock: Clock;
  /** Where the queue sends dead-lettered messages. */
  readonly deadLetter: DeadLetterRouter;
  /** The queue was deleted, by the broker, by its own `delete()` or by `x-expires`. */
  readonly onDelete: () => void;
  /** Errors nobody awaits (a consumer callback that threw, a dead-letter route that failed). */
  readonly onError: ErrorHandler;
  /** Refuse unknown queue and consumer arguments. */
  readonly strict: boolean;
  /** The broker's vhost, named in the queue's errors. */
  readonly vhost: string;
  /** Stored data found lost or moved past on open. */
  readonly onDataLoss: (loss: DataLossError) => void;
}

interface Kind {
  /**
   * Validates the declaration's arguments for this kind, touching nothing (406 on error, naming
   * the queue in `vhost`).
   */
  validate(declaration: Declaration, vhost: string): void;
  /** The queue arguments this kind acts on (strict mode refuses any other). */
  readonly arguments: readonly string[];
  /**
   * The arguments a redeclare compares, in the order the first that differs is named: derived
   * from `arguments` (see {@link comparedArguments}), so an argument the kind acts on is never
   * left out.
   */
  readonly compared: readonly string[];
  open(declaration: Declaration, context: KindContext): Promise<AnyQueue>;
  /** The policy keys this kind acts on: a policy holding any other key does not apply to it. */
  readonly policyKeys: ReadonlySet<string>;
  /**
   * Puts the arguments in force (the declared ones resolved with a policy) into effect on an open
   * queue of this kind. Resolves once what that dropped is stored.
   * @throws PreconditionFailedError (406) when they are invalid for the kind.
   */
  applyArguments(queue: AnyQueue, args: Readonly<FieldTable>, vhost: string): Promise<void>;
}

/**
 * The arguments RabbitMQ 3.10 compares on a redeclare of a classic queue, in its order: those
 * mqlite ignores (`x-queue-mode`, `x-queue-version`, `x-queue-master-locator`) too.
 */
const RABBITMQ_CLASSIC_COMPARED: readonly string[] = [
  'x-expires',
  'x-message-ttl',
  'x-dead-letter-exchange',
  'x-dead-letter-routing-key',
  'x-max-length',
  'x-max-length-bytes',
  'x-max-priority',
  'x-overflow',
  'x-queue-mode',
  'x-queue-version',
  'x-single-active-consumer',
  'x-queue-type',
  'x-queue-master-locator',
];

/** Those of a stream, in the order of RabbitMQ 3.10's stream queue type. */
const RABBITMQ_STREAM_COMPARED: readonly string[] = [
  'x-max-length-bytes',
  'x-queue-type',
  'x-max-age',
  'x-stream-max-segment-size-bytes',
  'x-initial-cluster-size',
  'x-queue-leader-locator',
];

/** Those of a quorum queue, in the order of RabbitMQ's quorum queue type. */
const RABBITMQ_QUORUM_COMPARED: readonly string[] = [
  'x-dead-letter-exchange',
  'x-dead-letter-routing-key',
  'x-dead-letter-strategy',
  'x-expires',
  'x-max-length',
  'x-max-length-bytes',
  'x-max-in-memory-length',
  'x-max-in-memory-bytes',
  'x-overflow',
  'x-single-active-consumer',
  'x-queue-type',
  'x-quorum-initial-group-size',
  'x-delivery-limit',
  'x-message-ttl',
  'x-queue-leader-locator',
];

/**
 * What a redeclare compares: the reference broker's arguments in its order, then every other
 * argument the kind acts on (as LavinMQ, which compares every argument, does for those RabbitMQ
 * lacks: a stream's `x-max-length`, a classic queue's `x-delivery-limit`, the LVQ arguments).
 */
function comparedArguments(
  broker: readonly string[],
  actedOn: readonly string[],
): readonly string[] {
  return [...broker, ...actedOn.filter((name) => !broker.includes(name))];
}

/**
 * A classic or priority queue compares the LVQ arguments as well, though it does not act on them:
 * redeclaring it as a last-value queue is inequivalent.
 */
const CLASSIC_COMPARED = comparedArguments(RABBITMQ_CLASSIC_COMPARED, [
  ...LVQ_ARGUMENTS,
  ...DEDUPLICATION_ARGUMENTS,
]);

/** The policy keys of classic queues (`delivery-limit` too, as they act on `x-delivery-limit`). */
const CLASSIC_POLICY_KEYS: ReadonlySet<string> = new Set([
  'message-ttl',
  'expires',
  'max-length',
  'max-length-bytes',
  'overflow',
  'dead-letter-exchange',
  'dead-letter-routing-key',
  'delivery-limit',
  'queue-mode',
]);

/** The policy keys of quorum queues, as RabbitMQ's quorum queues adhere to them. */
const QUORUM_POLICY_KEYS: ReadonlySet<string> = new Set([
  ...[...CLASSIC_POLICY_KEYS].filter((key) => key !== 'queue-mode'),
  'dead-letter-strategy',
]);

function applyClassic(queue: AnyQueue, args: Readonly<FieldTable>, vhost: string): Promise<void> {
  const classic = queue as Exclude<AnyQueue, StreamQueue>;
  return classic.applyLimits(
    parseClassicArguments(withoutNoLimit(args), queueResource({ name: classic.name, vhost })),
  );
}

/**
 * The arguments without a negative `x-delivery-limit` (a policy's "none", RabbitMQ 4's `-1`):
 * a classic queue has no default limit for it to lift.
 */
function withoutNoLimit(args: Readonly<FieldTable>): Readonly<FieldTable> {
  const limit = args['x-delivery-limit'];
  if (!(typeof limit === 'number' && limit < 0)) return args;
  const { 'x-delivery-limit': _none, ...rest } = args;
  return rest;
}

/**
 * The arguments a queue itself takes: without those of deduplication, which the broker applies
 * as it publishes (`x-message-deduplication`).
 */
function queueArguments(args: Readonly<FieldTable>): FieldTable {
  const out: FieldTable = { ...args };
  for (const name of DEDUPLICATION_ARGUMENTS) delete out[name];
  return out;
}

/** Checks a declaration's deduplication arguments, then its kind's own. */
function validated(
  validate: (d: Declaration, vhost: string) => void,
): (d: Declaration, vhost: string) => void {
  return (d, vhost) => {
    deduplicationOptions(d.arguments);
    validate(d, vhost);
  };
}

function classicOptions(d: Declaration, c: KindContext): ClassicQueueOptions {
  return {
    name: d.name,
    arguments: queueArguments(d.arguments),
    storage: c.storage,
    namespace: c.namespace,
    clock: c.clock,
    deadLetter: c.deadLetter,
    onDelete: c.onDelete,
    onError: c.onError,
    strict: c.strict,
    vhost: c.vhost,
  };
}

/** The factory of every queue kind. */
export const KINDS: Readonly<Record<QueueKind, Kind>> = {
  classic: {
    validate: validated((d, vhost) => {
      parseClassicArguments(d.arguments, queueResource({ name: d.name, vhost }));
    }),
    arguments: [...CLASSIC_ARGUMENTS, ...DEDUPLICATION_ARGUMENTS],
    compared: CLASSIC_COMPARED,
    open: (d, c) => Queue.open(classicOptions(d, c)),
    policyKeys: CLASSIC_POLICY_KEYS,
    applyArguments: applyClassic,
  },
  priority: {
    validate: validated((d, vhost) => {
      parseClassicArguments(d.arguments, queueResource({ name: d.name, vhost }));
    }),
    arguments: [...CLASSIC_ARGUMENTS, ...DEDUPLICATION_ARGUMENTS],
    compared: CLASSIC_COMPARED,
    open: (d, c) => PriorityQueue.open(classicOptions(d, c)),
    policyKeys: CLASSIC_POLICY_KEYS,
    applyArguments: applyClassic,
  },
  lvq: {
    validate: validated((d, vhost) => {
      parseLvqDeclaration(d.arguments, queueResource({ name: d.name, vhost }));
    }),
    arguments: [...LVQ_ARGUMENTS, ...DEDUPLICATION_ARGUMENTS],
    compared: comparedArguments(RABBITMQ_CLASSIC_COMPARED, [
      ...LVQ_ARGUMENTS,
      ...DEDUPLICATION_ARGUMENTS,
    ]),
    open: (d, c) => LastValueQueue.open(classicOptions(d, c)),
    policyKeys: CLASSIC_POLICY_KEYS,
    // The declaration's arguments chose this kind: they declare a last-value queue.
    applyArguments: (queue, args, vhost) =>
      (queue as LastValueQueue).applyLimits(
        parseLvqDeclaration(withoutNoLimit(args), queueResource({ name: queue.name, vhost }))!
          .classic,
      ),
  },
  quorum: {
    validate: (d, vhost) => {
      const queue = queueResource({ name: d.name, vhost });
      checkQuorumFlags(d, queue);
      parseQuorumArguments(d.arguments, queue);
    },
    arguments: QUORUM_ARGUMENTS,
    compared: comparedArguments(RABBITMQ_QUORUM_COMPARED, QUORUM_ARGUMENTS),
    open: (d, c) => QuorumQueue.open(classicOptions(d, c)),
    policyKeys: QUORUM_POLICY_KEYS,
    applyArguments: (queue, args, vhost) =>
      (queue as QuorumQueue).applyLimits(
        parseQuorumArguments(args, queueResource({ name: queue.name, vhost })),
      ),
  },
  stream: {
    validate: validated((d, vhost) => {
      parseStreamArguments({ ...d, vhost });
    }),
    arguments: [...STREAM_ARGUMENTS, ...DEDUPLICATION_ARGUMENTS],
    compared: comparedArguments(RABBITMQ_STREAM_COMPARED, [
      ...STREAM_ARGUMENTS,
      ...DEDUPLICATION_ARGUMENTS,
    ]),
    open: (d, c) =>
      StreamQueue.open({
        name: d.name,
        durable: d.durable,
        exclusive: d.exclusive,
        autoDelete: d.autoDelete,
        arguments: queueArguments(d.arguments),
        storage: c.storage,
        namespace: c.namespace,
        clock: c.clock,
        onDelete: c.onDelete,
        onError: c.onError,
        strict: c.strict,
        vhost: c.vhost,
        onDataLoss: c.onDataLoss,
      }),
    // As RabbitMQ and LavinMQ: retention by age and size; other limits do not apply to streams.
    policyKeys: new Set(['max-age', 'max-length-bytes']),
    applyArguments: async (queue, args, vhost) => {
      (queue as StreamQueue).applyLimits(
        parseStreamArguments({ name: queue.name, vhost, arguments: args }),
      );
    },
  },
};

/** The statistics of a queue of any kind. */
export function queueStats(queue: AnyQueue): QueueStats {
  if (queue instanceof StreamQueue) {
    const messages = queue.messageCount;
    return {
      messages,
      messagesReady: messages,
      messagesUnacknowledged: 0,
      bytes: queue.messageBytes,
      consumers: queue.consumerCount,
    };
  }
  const s = queue.stats();
  return {
    messages: s.messages,
    messagesReady: s.messagesReady,
    messagesUnacknowledged: s.messagesUnacknowledged,
    bytes: s.messageBytes,
    consumers: s.consumers,
  };
}
