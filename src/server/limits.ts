/**
 * The server's limits, with RabbitMQ's defaults and names: `connection_max`, `channel_max`,
 * `frame_max` and `max_message_size`. A content header (a message's properties and header
 * table) is one frame, so `frameMax` bounds the header table too, as it does in RabbitMQ.
 */

/** Limits of `listen()`; every one has RabbitMQ's default. */
export interface ServerLimits {
  /** Connections open at once, both listeners together (default: no limit). */
  readonly maxConnections?: number | undefined;
  /** Channels per connection the server proposes in connection.tune (default 2047). */
  readonly channelMax?: number | undefined;
  /** Largest frame in bytes, proposed in connection.tune (default 131072, at least 4096). */
  readonly frameMax?: number | undefined;
  /** Largest message body in bytes (default and most 128 MiB, RabbitMQ's `max_message_size`). */
  readonly maxMessageBytes?: number | undefined;
}

/** Every limit, defaults filled in. */
export type Limits = { readonly [K in keyof ServerLimits]-?: number };

/** RabbitMQ's smallest frame-max. */
export const FRAME_MIN = 4096;
/** RabbitMQ's default `max_message_size`: 128 MiB, also the most a broker stores. */
export const MAX_MESSAGE_BYTES = 128 * 1024 * 1024;

export const DEFAULT_LIMITS: Limits = {
  maxConnections: Number.POSITIVE_INFINITY,
  channelMax: 2047,
  frameMax: 131072,
  maxMessageBytes: MAX_MESSAGE_BYTES,
};

/**
 * `limits` with defaults filled in.
 * @throws RangeError for a limit that is not a whole number in its range.
 */
export function resolveLimits(limits: ServerLimits = {}): Limits {
  const resolved: Limits = { ...DEFAULT_LIMITS, ...definedOnly(limits) };
  const { maxConnections } = resolved;
  if (maxConnections !== Number.POSITIVE_INFINITY)
    checkInteger('maxConnections', maxConnections, 0);
  checkInteger('channelMax', resolved.channelMax, 1, 65535);
  checkInteger('frameMax', resolved.frameMax, FRAME_MIN, 2 ** 32 - 1);
  checkInteger('maxMessageBytes', resolved.maxMessageBytes, 1, MAX_MESSAGE_BYTES);
  return resolved;
}

function definedOnly(limits: ServerLimits): Partial<Limits> {
  return Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined));
}

function checkInteger(name: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer ${min}..${max}, got ${value}`);
  }
}
