/**
 * Queue arguments of classic queues (the plain FIFO queue, the priority queue and the last-value
 * queue), parsed once at declaration into a normalized form. The Broker compares normalized forms
 * to decide whether a redeclaration is equivalent.
 */
import { inequivalentArg, invalidArg } from '../errors.js';

/** What a queue does when a publish would take it past `x-max-length` / `x-max-length-bytes`. */
export type OverflowMode = 'drop-head' | 'reject-publish' | 'reject-publish-dlx';

const OVERFLOW_MODES: readonly OverflowMode[] = [
  'drop-head',
  'reject-publish',
  'reject-publish-dlx',
];

/** Highest `x-max-priority` (AMQP priorities are one octet). */
export const MAX_PRIORITY_LIMIT = 255;

/** The validated, normalized arguments of a classic queue. Absent means "not set". */
export interface ClassicArguments {
  /** `x-max-priority`: highest priority level, 0..255. */
  readonly maxPriority?: number;
  /** `x-message-ttl`: ms a message may stay ready, ≥ 0. */
  readonly messageTtl?: number;
  /** `x-expires`: ms of disuse after which the queue deletes itself, > 0. */
  readonly expires?: number;
  /** `x-max-length`: most ready messages, ≥ 0. */
  readonly maxLength?: number;
  /** `x-max-length-bytes`: most body bytes of ready messages, ≥ 0. */
  readonly maxLengthBytes?: number;
  /** `x-overflow` (default `drop-head`). */
  readonly overflow: OverflowMode;
  /** `x-delivery-limit`: requeues allowed before a message is dead-lettered, ≥ 0. */
  readonly deliveryLimit?: number;
  /** `x-dead-letter-exchange` (`""` is the default exchange). */
  readonly deadLetterExchange?: string;
  /** `x-dead-letter-routing-key`. */
  readonly deadLetterRoutingKey?: string;
  /** `x-single-active-consumer`. */
  readonly singleActiveConsumer: boolean;
  /**
   * Requeued messages go to the back of the queue, not to their place: a quorum queue without a
   * delivery limit (`x-delivery-limit: -1`).
   */
  readonly requeueToBack?: boolean;
  /** `x-dead-letter-strategy` of a quorum queue, when `at-least-once`. */
  readonly deadLetterStrategy?: 'at-least-once';
}

/** Normalized field → the argument name a broker reports in its errors. */
const ARGUMENT_NAMES: Readonly<Record<keyof ClassicArguments, string>> = {
  maxPriority: 'x-max-priority',
  messageTtl: 'x-message-ttl',
  expires: 'x-expires',
  maxLength: 'x-max-length',
  maxLengthBytes: 'x-max-length-bytes',
  overflow: 'x-overflow',
  deliveryLimit: 'x-delivery-limit',
  deadLetterExchange: 'x-dead-letter-exchange',
  deadLetterRoutingKey: 'x-dead-letter-routing-key',
  singleActiveConsumer: 'x-single-active-consumer',
  requeueToBack: 'x-delivery-limit',
  deadLetterStrategy: 'x-dead-letter-strategy',
};

/** The queue arguments a classic queue acts on (strict mode refuses any other). */
export const CLASSIC_ARGUMENTS: readonly string[] = [
  'x-queue-type',
  ...new Set(Object.values(ARGUMENT_NAMES)),
].filter((name) => name !== 'x-dead-letter-strategy');

/**
 * Largest count limit: what an AMQP long holds, as RabbitMQ takes it (beyond 2^53 a limit is
 * approximate, and never reached).
 */
const MAX_LONG = 2 ** 63;

/** Largest timer value: Node clamps longer timeouts, so longer TTLs would fire early. */
const MAX_MS = 2 ** 31 - 1;

/**
 * Validates the classic-queue arguments of a declaration and returns them normalized. Arguments
 * this module does not know (`x-queue-type`, LVQ keys, ...) are left to their owners.
 *
 * @param queue the queue as errors name it (`resourceName`: "queue 'q' in vhost '/'").
 * @throws PreconditionFailedError (406) naming the argument and its limit.
 */
export function parseClassicArguments(
  args: Readonly<Record<string, unknown>> | undefined,
  queue: string,
): ClassicArguments {
  const a = args ?? {};
  const maxPriority = integer(a, 'x-max-priority', queue, 0, MAX_PRIORITY_LIMIT);
  const messageTtl = integer(a, 'x-message-ttl', queue, 0, MAX_MS);
  const expires = integer(a, 'x-expires', queue, 1, MAX_MS);
  const maxLength = integer(a, 'x-max-length', queue, 0, MAX_LONG);
  const maxLengthBytes = integer(a, 'x-max-length-bytes', queue, 0, MAX_LONG);
  const deliveryLimit = integer(a, 'x-delivery-limit', queue, 0, MAX_LONG);
  const deadLetterExchange = shortString(a, 'x-dead-letter-exchange', queue);
  const deadLetterRoutingKey = shortString(a, 'x-dead-letter-routing-key', queue);
  if (deadLetterRoutingKey !== undefined && deadLetterExchange === undefined) {
    throw invalidArg(
      'x-dead-letter-routing-key',
      queue,
      'needs x-dead-letter-exchange to be set as well',
    );
  }
  const overflowValue = a['x-overflow'];
  if (
    overflowValue !== undefined &&
    !(OVERFLOW_MODES as readonly unknown[]).includes(overflowValue)
  ) {
    throw invalidArg('x-overflow', queue, `must be one of ${OVERFLOW_MODES.join(', ')}`);
  }
  const sac = a['x-single-active-consumer'];
  if (sac !== undefined && typeof sac !== 'boolean') {
    throw invalidArg('x-single-active-consumer', queue, 'must be a boolean');
  }
  return {
    ...(maxPriority !== undefined && { maxPriority }),
    ...(messageTtl !== undefined && { messageTtl }),
    ...(expires !== undefined && { expires }),
    ...(maxLength !== undefined && { maxLength }),
    ...(maxLengthBytes !== undefined && { maxLengthBytes }),
    overflow: (overflowValue as OverflowMode | undefined) ?? 'drop-head',
    ...(deliveryLimit !== undefined && { deliveryLimit }),
    ...(deadLetterExchange !== undefined && { deadLetterExchange }),
    ...(deadLetterRoutingKey !== undefined && { deadLetterRoutingKey }),
    singleActiveConsumer: sac === true,
  };
}

/**
 * The AMQP name of the first argument in which two normalized declarations differ, or undefined
 * when they are equivalent.
 */
export function classicArgumentsDiff(a: ClassicArguments, b: ClassicArguments): string | undefined {
  for (const key of Object.keys(ARGUMENT_NAMES) as (keyof ClassicArguments)[]) {
    if (a[key] !== b[key]) return ARGUMENT_NAMES[key];
  }
  return undefined;
}

/**
 * Throws 406 "inequivalent arg '…' for queue '…'" when a redeclaration's arguments differ from the
 * declaration's.
 */
export function assertEquivalentClassicArguments(
  declared: ClassicArguments,
  redeclared: ClassicArguments,
  queue: string,
): void {
  const diff = classicArgumentsDiff(declared, redeclared);
  if (diff !== undefined) throw inequivalentArg(diff, queue);
}

function integer(
  args: Readonly<Record<string, unknown>>,
  name: string,
  queue: string,
  min: number,
  max: number,
): number | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    const range = max === MAX_LONG ? `≥ ${min}` : `${min}..${max}`;
    throw invalidArg(name, queue, `must be an integer ${range}, got ${describe(value)}`);
  }
  return n;
}

function shortString(
  args: Readonly<Record<string, unknown>>,
  name: string,
  queue: string,
): string | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || Buffer.byteLength(value) > 255) {
    throw invalidArg(name, queue, `must be a string of at most 255 bytes, got ${describe(value)}`);
  }
  return value;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value.slice(0, 40)}'` : String(value);
}
