/**
 * AMQP timestamps: a 64-bit count of seconds, which a broker stores and returns whatever its
 * value. mqlite reads the 64 bits as a signed count (POSIX `time_t`, as the Go and Java clients
 * read them). A `Date` holds ±8.64e15 ms; a timestamp beyond is an {@link AmqpTimestamp}, a `Date`
 * too (so properties keep `@cloudamqp/amqp-client`'s types) that holds its exact seconds, so that
 * every value round-trips bit for bit, over the wire and through storage.
 */

/** The most seconds, either side of 1970, whose milliseconds a `Date` holds. */
export const MAX_DATE_SECONDS = 8_640_000_000_000;

const INT64_MIN = -(2n ** 63n);
const UINT64_END = 2n ** 64n;

/**
 * A timestamp as a count of seconds, exact whatever its 64-bit value. Beyond what a `Date` holds
 * it is an invalid `Date` (`getTime()` is `NaN`, as `@cloudamqp/amqp-client` reads such a value);
 * `seconds` holds it.
 */
export class AmqpTimestamp extends Date {
  /** Seconds since 1970-01-01T00:00:00Z, signed. */
  readonly seconds: bigint;

  /**
   * @param seconds a count of seconds that 64 bits hold: -2^63..2^64-1, an unsigned value
   *   standing for the same 64 bits as its signed one.
   * @throws RangeError for a count 64 bits do not hold.
   */
  constructor(seconds: bigint) {
    if (typeof seconds !== 'bigint' || seconds < INT64_MIN || seconds >= UINT64_END) {
      throw new RangeError(`an AMQP timestamp is a count of seconds that 64 bits hold`);
    }
    const signed = BigInt.asIntN(64, seconds);
    const n = Number(signed);
    super(Math.abs(n) <= MAX_DATE_SECONDS ? n * 1000 : Number.NaN);
    this.seconds = signed;
  }
}

/** The timestamp of a signed count of seconds: a plain `Date` when one holds it. */
export function timestampOfSeconds(seconds: bigint): Date {
  const n = Number(seconds);
  return Math.abs(n) <= MAX_DATE_SECONDS ? new Date(n * 1000) : new AmqpTimestamp(seconds);
}

/** A timestamp's whole seconds (a `Date`'s rounded down), as AMQP counts them. */
export function timestampSeconds(value: Date): bigint {
  return value instanceof AmqpTimestamp
    ? value.seconds
    : BigInt(Math.floor(value.getTime() / 1000));
}

/**
 * Whether a `Date` is a timestamp beyond what a plain one holds, to be stored as its seconds.
 */
export function isWideTimestamp(value: unknown): value is AmqpTimestamp {
  return value instanceof AmqpTimestamp && Number.isNaN(value.getTime());
}

/**
 * A copy of a timestamp given in process (a property or a header value), or `undefined` when it
 * is an invalid `Date` that is no {@link AmqpTimestamp}.
 */
export function copyTimestamp(value: Date): Date | undefined {
  if (value instanceof AmqpTimestamp) return timestampOfSeconds(value.seconds);
  const time = value.getTime();
  return Number.isNaN(time) ? undefined : new Date(time);
}
