/**
 * The rules that make a classic queue a quorum queue, as RabbitMQ's quorum queue type applies
 * them to a declaration: what it refuses (flags and arguments), what it defaults (a delivery
 * limit of 20 since RabbitMQ 4.0) and what it accepts without effect (replication arguments).
 * The result is a `ClassicArguments`: the queue itself is a classic queue with these limits.
 */
import { invalidArg, PreconditionFailedError } from '../../errors.js';
import { CLASSIC_ARGUMENTS, type ClassicArguments, parseClassicArguments } from '../arguments.js';

/** The delivery limit of a quorum queue declared without one (RabbitMQ 4.0 and later). */
export const DEFAULT_DELIVERY_LIMIT = 20;

/** Replication arguments: checked as RabbitMQ checks them, without effect in one process. */
const REPLICATION_ARGUMENTS = [
  'x-quorum-initial-group-size',
  'x-quorum-target-group-size',
  'x-queue-leader-locator',
];

/** Memory limits RabbitMQ 3.10 still accepts and ignores (quorum queues keep bodies on disk). */
const IGNORED_ARGUMENTS = ['x-max-in-memory-length', 'x-max-in-memory-bytes'];

/** Arguments RabbitMQ knows but refuses on a quorum queue. */
const REFUSED_ARGUMENTS = ['x-max-priority', 'x-queue-mode', 'x-queue-master-locator'];

/** The queue arguments a quorum queue acts on or accepts (strict mode refuses any other). */
export const QUORUM_ARGUMENTS: readonly string[] = [
  ...CLASSIC_ARGUMENTS.filter((name) => !REFUSED_ARGUMENTS.includes(name)),
  'x-dead-letter-strategy',
  ...REPLICATION_ARGUMENTS,
  ...IGNORED_ARGUMENTS,
];

/** The declare flags a quorum queue is checked on. */
export interface QuorumFlags {
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
}

/**
 * Refuses the flags a quorum queue cannot have, in RabbitMQ's order and words: auto-delete,
 * exclusive, non-durable.
 * @param queue the queue as errors name it ("queue 'q' in vhost '/'").
 * @throws PreconditionFailedError (406) "invalid property 'auto-delete' for queue …".
 */
export function checkQuorumFlags(flags: QuorumFlags, queue: string): void {
  const refused = flags.autoDelete
    ? 'auto-delete'
    : flags.exclusive
      ? 'exclusive-owner'
      : !flags.durable
        ? 'non-durable'
        : undefined;
  if (refused !== undefined) {
    throw new PreconditionFailedError(`invalid property '${refused}' for ${queue}`);
  }
}

/**
 * Validates a quorum queue's arguments and returns the limits it runs with: a missing
 * `x-delivery-limit` is 20, a negative one means no limit (and requeued messages go to the back
 * of the queue, as RabbitMQ 4 returns them then); `x-overflow: reject-publish-dlx` acts as
 * `drop-head`, as RabbitMQ's quorum queues fall back to it.
 * @param queue the queue as errors name it ("queue 'q' in vhost '/'").
 * @throws PreconditionFailedError (406) in RabbitMQ's words.
 */
export function parseQuorumArguments(
  args: Readonly<Record<string, unknown>> | undefined,
  queue: string,
): ClassicArguments {
  const a = args ?? {};
  for (const name of REFUSED_ARGUMENTS) {
    if (a[name] !== undefined) {
      throw new PreconditionFailedError(
        `invalid arg '${name}' for ${queue} of queue type rabbit_quorum_queue`,
      );
    }
  }
  const strategy = a['x-dead-letter-strategy'];
  if (strategy !== undefined && strategy !== 'at-most-once' && strategy !== 'at-least-once') {
    throw invalidArg('x-dead-letter-strategy', queue, 'invalid_dlx_strategy');
  }
  for (const name of ['x-quorum-initial-group-size', 'x-quorum-target-group-size']) {
    const size = a[name];
    if (size !== undefined && !isInteger(size)) {
      throw invalidArg(name, queue, `"expected integer, got ${fieldType(size)}"`);
    }
  }
  const locator = a['x-queue-leader-locator'];
  if (locator !== undefined && locator !== 'client-local' && locator !== 'balanced') {
    throw invalidArg('x-queue-leader-locator', queue, 'invalid_queue_locator_arg');
  }
  const limit = a['x-delivery-limit'];
  const unlimited = isInteger(limit) && Number(limit) < 0;
  const classic = parseClassicArguments(
    unlimited ? { ...a, 'x-delivery-limit': undefined } : a,
    queue,
  );
  return {
    ...classic,
    overflow: classic.overflow === 'reject-publish-dlx' ? 'drop-head' : classic.overflow,
    ...(unlimited
      ? { requeueToBack: true }
      : { deliveryLimit: classic.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT }),
    ...(strategy === 'at-least-once' && { deadLetterStrategy: 'at-least-once' as const }),
  };
}

function isInteger(value: unknown): boolean {
  return typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value));
}

/** The AMQP type RabbitMQ names in its "expected integer, got …". */
function fieldType(value: unknown): string {
  if (typeof value === 'string') return 'longstr';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return 'double';
  return typeof value;
}
