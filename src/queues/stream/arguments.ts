import { invalidArg, PreconditionFailedError, queueResource } from '../../errors.js';

/** Default segment size of a stream: 8 MiB, as LavinMQ. */
export const DEFAULT_STREAM_SEGMENT_BYTES = 8 * 1024 * 1024;

/** Queue arguments a stream refuses with 406 "Argument <name> not allowed for streams". */
export const REFUSED_STREAM_ARGUMENTS: readonly string[] = [
  'x-dead-letter-exchange',
  'x-dead-letter-routing-key',
  'x-expires',
  'x-delivery-limit',
  'x-overflow',
  'x-single-active-consumer',
  'x-max-priority',
];

/** Units of `x-max-age`: years, calendar months, days, hours, minutes, seconds. */
export type MaxAgeUnit = 'Y' | 'M' | 'D' | 'h' | 'm' | 's';

/** A parsed `x-max-age`. */
export interface MaxAge {
  readonly amount: number;
  readonly unit: MaxAgeUnit;
}

/** The validated, normalized arguments of a stream. */
export interface StreamArguments {
  readonly maxAge?: MaxAge;
  readonly maxLength?: number;
  readonly maxLengthBytes?: number;
  /** Segment size in bytes (`x-stream-max-segment-size-bytes`). */
  readonly segmentBytes: number;
}

/** How a stream is declared: the AMQP queue flags and the arguments table. */
export interface StreamDeclaration {
  /** The stream's name, for error messages. */
  readonly name?: string;
  /** The vhost errors name (default `/`). */
  readonly vhost?: string | undefined;
  /** Streams are always durable; `false` is refused. */
  readonly durable?: boolean;
  /** Streams cannot be exclusive; `true` is refused. */
  readonly exclusive?: boolean;
  /** Streams cannot auto-delete; `true` is refused. */
  readonly autoDelete?: boolean;
  readonly arguments?: Readonly<Record<string, unknown>>;
}

const MAX_AGE = /^(\d+)([YMDhms])$/;

const UNIT_MS: Record<'D' | 'h' | 'm' | 's', number> = {
  D: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1000,
};

/**
 * Validates a stream declaration and returns its normalized arguments. Every rule a broker
 * applies to `x-queue-type: stream` is here, so the Broker and `StreamQueue.open` share it; two
 * declarations are equivalent when their normalized arguments are equal.
 *
 * @throws PreconditionFailedError (406) with the broker's message for every refused flag or
 *   argument.
 */
export function parseStreamArguments(declaration: StreamDeclaration = {}): StreamArguments {
  if (declaration.durable === false) {
    throw new PreconditionFailedError('A stream cannot be non-durable');
  }
  if (declaration.exclusive === true) {
    throw new PreconditionFailedError('A stream cannot be exclusive');
  }
  if (declaration.autoDelete === true) {
    throw new PreconditionFailedError('A stream cannot be auto-delete');
  }
  const args = declaration.arguments ?? {};
  for (const name of REFUSED_STREAM_ARGUMENTS) {
    if (args[name] !== undefined) {
      throw new PreconditionFailedError(`Argument ${name} not allowed for streams`);
    }
  }
  const type = args['x-queue-type'];
  if (type !== undefined && type !== 'stream') {
    throw new PreconditionFailedError(`x-queue-type must be 'stream' for a stream, got '${type}'`);
  }

  const maxAge =
    args['x-max-age'] === undefined
      ? undefined
      : parseMaxAge(
          args['x-max-age'],
          declaration.name === undefined
            ? undefined
            : queueResource({ name: declaration.name, vhost: declaration.vhost }),
        );
  // Retention limits up to what an AMQP long holds, as LavinMQ takes them (beyond 2^53 a limit
  // is approximate, and never reached).
  const maxLength = optionalCount(args, 'x-max-length', 0, 2 ** 63);
  const maxLengthBytes = optionalCount(args, 'x-max-length-bytes', 0, 2 ** 63);
  const segmentBytes =
    optionalCount(args, 'x-stream-max-segment-size-bytes', 1) ?? DEFAULT_STREAM_SEGMENT_BYTES;
  return {
    ...(maxAge && { maxAge }),
    ...(maxLength !== undefined && { maxLength }),
    ...(maxLengthBytes !== undefined && { maxLengthBytes }),
    segmentBytes,
  };
}

/** Normalized field → the argument a broker names in "inequivalent arg" errors. */
const ARGUMENT_NAMES: Readonly<Record<keyof StreamArguments, string>> = {
  maxAge: 'x-max-age',
  maxLength: 'x-max-length',
  maxLengthBytes: 'x-max-length-bytes',
  segmentBytes: 'x-stream-max-segment-size-bytes',
};

/** The queue arguments a stream acts on (strict mode refuses any other). */
export const STREAM_ARGUMENTS: readonly string[] = [
  'x-queue-type',
  ...Object.values(ARGUMENT_NAMES),
];

/**
 * The AMQP name of the first argument in which two normalized stream declarations differ, or
 * undefined when they are equivalent.
 */
export function streamArgumentsDiff(a: StreamArguments, b: StreamArguments): string | undefined {
  for (const key of Object.keys(ARGUMENT_NAMES) as (keyof StreamArguments)[]) {
    if (key === 'maxAge') {
      if (a.maxAge?.amount !== b.maxAge?.amount || a.maxAge?.unit !== b.maxAge?.unit) {
        return ARGUMENT_NAMES.maxAge;
      }
    } else if (a[key] !== b[key]) return ARGUMENT_NAMES[key];
  }
  return undefined;
}

/**
 * Parses an `x-max-age` value such as `'7D'` or `'12h'`.
 * @param queue the stream as errors name it (`queueResource`), if it has a name.
 */
export function parseMaxAge(value: unknown, queue?: string): MaxAge {
  const match = typeof value === 'string' ? MAX_AGE.exec(value) : null;
  const amount = Number(match?.[1]);
  if (!match || !Number.isSafeInteger(amount)) {
    const got = typeof value === 'string' ? `'${value.slice(0, 40)}'` : `a ${typeof value}`;
    const why = `must be a string of a whole number and a unit, Y, M, D, h, m or s (as '7D' or '12h'), got ${got}`;
    throw queue === undefined
      ? new PreconditionFailedError(`invalid arg 'x-max-age': ${why}`)
      : invalidArg('x-max-age', queue, why);
  }
  return { amount, unit: match[2] as MaxAgeUnit };
}

/**
 * The instant `age` before `now`: messages that arrived before it are too old. Years and months
 * are calendar ones (one month before March 31st is the last day of February).
 */
export function maxAgeCutoff(age: MaxAge, now: number): number {
  if (age.unit === 'Y' || age.unit === 'M') {
    const months = age.unit === 'Y' ? age.amount * 12 : age.amount;
    const date = new Date(now);
    const day = date.getUTCDate();
    date.setUTCDate(1);
    date.setUTCMonth(date.getUTCMonth() - months);
    const lastDay = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0));
    date.setUTCDate(Math.min(day, lastDay.getUTCDate()));
    return date.getTime();
  }
  return now - age.amount * UNIT_MS[age.unit];
}

/** The first instant at which a message that arrived at `time` is older than `age`. */
export function maxAgeExpiry(age: MaxAge, time: number): number {
  if (age.unit !== 'Y' && age.unit !== 'M') return time + age.amount * UNIT_MS[age.unit] + 1;
  // Calendar units have no fixed length: step forward a month bound at a time would be exact
  // but costly; a binary search over the monotonic cutoff is exact and cheap.
  const months = age.unit === 'Y' ? age.amount * 12 : age.amount;
  let lo = time;
  let hi = time + (months + 1) * 31 * UNIT_MS.D + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (maxAgeCutoff(age, mid) > time) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function optionalCount(
  args: Readonly<Record<string, unknown>>,
  name: string,
  min: 0 | 1,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
    const what = min === 0 ? 'a non-negative integer' : 'a positive integer';
    throw new PreconditionFailedError(`${name} must be ${what}`);
  }
  return n;
}
