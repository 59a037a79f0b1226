/**
 * Queue names as AMQP brokers take them: any short string of 1–255 bytes of UTF-8. An empty name
 * asks the server to make one up (`amq.gen-…`); clients may not create `amq.`-prefixed names.
 * Names are never paths: storage adapters encode them, so `../x` is an ordinary name.
 */
import { randomBytes } from 'node:crypto';
import { AccessRefusedError } from '../errors.js';

/** Longest queue name in bytes of UTF-8 (an AMQP short string). */
export const MAX_QUEUE_NAME_BYTES = 255;

const RESERVED_PREFIX = 'amq.';
// With the `u` flag, only a surrogate that is not part of a pair is a code point of its own.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Validates a queue name for a declaration and returns the name to use: `name` itself, or a fresh
 * `amq.gen-<random>` for an empty name when `generate` is set.
 *
 * @param generate an empty name gets a server-generated one (a non-passive declare).
 * @param create the caller would create the queue: `amq.` names are refused (403).
 * @throws TypeError for a non-string or a string that is not well-formed Unicode (lone
 *   surrogates would not survive UTF-8), RangeError for an empty (when not generated) or too long
 *   name, AccessRefusedError for a reserved name on create.
 */
export function checkQueueName(name: unknown, generate = false, create = false): string {
  if (typeof name !== 'string') {
    throw new TypeError(`queue name must be a string, got ${typeof name}`);
  }
  if (name === '') {
    if (generate) return generateQueueName();
    throw new RangeError('queue name must not be empty');
  }
  if (LONE_SURROGATE.test(name)) {
    throw new TypeError('queue name must be well-formed Unicode (it has a lone surrogate)');
  }
  // Up to 85 UTF-16 units never exceed 255 UTF-8 bytes: skip the byte count for short names.
  if (name.length > 85) {
    const bytes = Buffer.byteLength(name);
    if (bytes > MAX_QUEUE_NAME_BYTES) {
      throw new RangeError(
        `queue name must be at most ${MAX_QUEUE_NAME_BYTES} bytes of UTF-8, got ${bytes}`,
      );
    }
  }
  if (create && name.startsWith(RESERVED_PREFIX)) {
    throw new AccessRefusedError(`queue name '${name}' contains reserved prefix 'amq.*'`);
  }
  return name;
}

/** A server-generated queue name, as RabbitMQ makes them: `amq.gen-` and 22 random characters. */
export function generateQueueName(): string {
  return `amq.gen-${randomBytes(16).toString('base64url')}`;
}
