/**
 * Message deduplication, as LavinMQ serves it on an exchange or a queue declared with
 * `x-message-deduplication: true`: a message whose `x-deduplication-header` (or the header the
 * `x-deduplication-header` argument names) holds a value seen within the cache is a duplicate.
 * The cache holds `x-cache-size` values (default 128), the oldest going first, each for
 * `x-cache-ttl` ms or the message's own `x-cache-ttl` header (none: until evicted). It lives in
 * memory only, as LavinMQ's does: a restart forgets it.
 */
import type { Clock } from '../clock.js';
import { PreconditionFailedError } from '../errors.js';
import type { FieldTable } from '../message/types.js';
import { fieldKey } from './field-values.js';

/** The header holding a message's identity when the arguments name none. */
export const DEDUPLICATION_HEADER = 'x-deduplication-header';

/** The arguments of deduplication, as LavinMQ names them. */
export const DEDUPLICATION_ARGUMENTS: readonly string[] = [
  'x-message-deduplication',
  'x-cache-size',
  'x-cache-ttl',
  DEDUPLICATION_HEADER,
];

const DEFAULT_CACHE_SIZE = 128;
const MAX_U32 = 0xffff_ffff;

/** How an exchange or queue deduplicates. */
export interface DeduplicationOptions {
  readonly cacheSize: number;
  /** Default lifetime of a cached value in ms; absent: until evicted. */
  readonly ttl?: number;
  readonly header: string;
}

const own = (args: Readonly<FieldTable>, key: string) =>
  Object.hasOwn(args, key) ? args[key] : undefined;

function integer(args: Readonly<FieldTable>, key: string): number | undefined {
  const value = own(args, key);
  if (value === undefined) return undefined;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n)) {
    throw new PreconditionFailedError(`${key} header not an integer`);
  }
  if (n < 0) throw new PreconditionFailedError(`${key} header less than minimum value 0`);
  if (n > MAX_U32) throw new PreconditionFailedError(`${key} header greater than maximum value`);
  return n;
}

/**
 * Reads the deduplication arguments of an exchange or queue: undefined when
 * `x-message-deduplication` is not `true`. Invalid values are refused (406) with LavinMQ's
 * wording for queues, whether deduplication is on or not.
 */
export function deduplicationOptions(args: Readonly<FieldTable>): DeduplicationOptions | undefined {
  const enabled = own(args, 'x-message-deduplication');
  if (enabled !== undefined && typeof enabled !== 'boolean') {
    throw new PreconditionFailedError('x-message-deduplication header not a boolean');
  }
  const cacheSize = integer(args, 'x-cache-size');
  const ttl = integer(args, 'x-cache-ttl');
  const header = own(args, DEDUPLICATION_HEADER);
  if (header !== undefined && typeof header !== 'string') {
    throw new PreconditionFailedError(`${DEDUPLICATION_HEADER} header not a string`);
  }
  if (enabled !== true) return undefined;
  return {
    // A size of 0 keeps nothing: LavinMQ's cache of 0 evicts before every insert all the same.
    cacheSize: cacheSize ?? DEFAULT_CACHE_SIZE,
    ...(ttl !== undefined && { ttl }),
    header: header ?? DEDUPLICATION_HEADER,
  };
}

/** The deduplication arguments in which two declarations differ, the first of them, or undefined. */
export function deduplicationDiff(
  a: Readonly<FieldTable>,
  b: Readonly<FieldTable>,
): string | undefined {
  return DEDUPLICATION_ARGUMENTS.find((key) => fieldKey(own(a, key)) !== fieldKey(own(b, key)));
}

/** The deduplication cache of one exchange or queue, and how many duplicates it dropped. */
export class Deduplicator {
  readonly #options: DeduplicationOptions;
  readonly #clock: Clock;
  /** Identity key of each cached value → when it expires (Infinity: never), oldest first. */
  readonly #seen = new Map<string, number>();
  #dropped = 0;

  constructor(options: DeduplicationOptions, clock: Clock) {
    this.#options = options;
    this.#clock = clock;
  }

  /** Duplicates dropped so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Whether a message with these headers is a duplicate (counted as dropped); if not, its value
   * is remembered. A message without the header is never a duplicate.
   */
  isDuplicate(headers: Readonly<FieldTable> | undefined): boolean {
    const value = headers && own(headers, this.#options.header);
    if (value === undefined) return false;
    const key = fieldKey(value);
    const now = this.#clock.now();
    const expires = this.#seen.get(key);
    if (expires !== undefined) {
      if (expires > now) {
        this.#dropped++;
        return true;
      }
      this.#seen.delete(key);
    }
    if (this.#seen.size >= this.#options.cacheSize) {
      const oldest = this.#seen.keys().next();
      if (!oldest.done) this.#seen.delete(oldest.value);
    }
    const ttl = messageTtl(headers) ?? this.#options.ttl;
    if (this.#options.cacheSize > 0) {
      this.#seen.set(key, ttl === undefined ? Number.POSITIVE_INFINITY : now + ttl);
    }
    return false;
  }
}

/** A message's own `x-cache-ttl` header: an integer, as LavinMQ reads it (others ignored). */
function messageTtl(headers: Readonly<FieldTable> | undefined): number | undefined {
  const ttl = headers && own(headers, 'x-cache-ttl');
  return typeof ttl === 'number' && Number.isInteger(ttl) && ttl >= 0 ? ttl : undefined;
}
