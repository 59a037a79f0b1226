/**
 * What `broker.queue(name, options)` takes, and how a declaration picks its queue kind from the
 * AMQP arguments exactly as brokers spell them:
 *
 * - `x-queue-type: 'stream'` → a stream;
 * - `x-queue-type: 'quorum'` → a quorum queue (its kind checks the flags and arguments it refuses);
 * - `qpid.last_value_queue: true` or `qpid.last_value_queue_key: '<header>'` → a last-value queue
 *   (it wins over `x-max-priority`, whose value is then ignored, as the Qpid Java broker does);
 * - `x-max-priority` → a priority queue;
 * - anything else → a plain FIFO queue. `x-queue-type: 'classic'` is accepted and means the same.
 *
 * camelCase sugar (`maxPriority`, `messageTtl`, `lvqKey`, …) may stand beside `arguments`; giving
 * both for one argument with different values is a TypeError.
 */
import { DEFAULT_VHOST, invalidArg, queueResource } from '../errors.js';
import { describeField, fieldEquals } from '../exchanges/field-values.js';
import type { FieldTable, FieldValue } from '../message/types.js';
import { carryWireTypes } from '../message/wire-types.js';
import type { OverflowMode } from '../queues/arguments.js';
import { parseLvqDeclaration } from '../queues/lvq/arguments.js';
import { emptyTable, isPlainTable } from '../table.js';

/** The queue kinds the broker makes. */
export type QueueKind = 'classic' | 'priority' | 'lvq' | 'stream' | 'quorum';

/**
 * Options of `broker.queue(name, options)`: the AMQP declare flags, the arguments table, and
 * camelCase sugar for the arguments mqlite understands.
 */
export interface QueueDeclareOptions {
  /** Only check that the queue exists (404 if not); nothing is compared or created. */
  passive?: boolean;
  /** Survives a broker restart on persistent storage. Default: true, false for an empty name. */
  durable?: boolean;
  /** Belongs to the declaring session; deleted when it closes. Default: false, true for `''`. */
  exclusive?: boolean;
  /** Deleted once its last consumer goes. Default: false, true for an empty name. */
  autoDelete?: boolean;
  /** The AMQP arguments table (`x-max-priority`, `x-queue-type`, `qpid.last_value_queue`, …). */
  arguments?: Record<string, unknown>;
  /** `x-queue-type`: `'stream'`, `'quorum'`, or `'classic'` (the default). */
  type?: 'classic' | 'stream' | 'quorum';
  /** `x-max-priority`: makes a priority queue with levels 0..maxPriority. */
  maxPriority?: number;
  /** `x-message-ttl` in ms. */
  messageTtl?: number;
  /** `x-expires`: ms without consumers or use after which the queue deletes itself. */
  expires?: number;
  /** `x-max-length`: most ready messages. */
  maxLength?: number;
  /** `x-max-length-bytes`: most bytes of ready messages. */
  maxLengthBytes?: number;
  /** `x-overflow`: `drop-head`, `reject-publish` or `reject-publish-dlx`. */
  overflow?: OverflowMode;
  /** `x-dead-letter-exchange` (`''` is the default exchange: route to a queue by name). */
  deadLetterExchange?: string;
  /** `x-dead-letter-routing-key`. */
  deadLetterRoutingKey?: string;
  /** `x-delivery-limit`: redeliveries before a message is dead-lettered. */
  deliveryLimit?: number;
  /** `x-single-active-consumer`. */
  singleActiveConsumer?: boolean;
  /** `x-max-age` of a stream, e.g. `'7D'`. */
  maxAge?: string;
  /** `x-stream-max-segment-size-bytes` of a stream. */
  segmentBytes?: number;
  /** `qpid.last_value_queue`: a last-value queue keyed by the `qpid.LVQ_key` header. */
  lvq?: boolean;
  /** `qpid.last_value_queue_key`: a last-value queue keyed by this header. */
  lvqKey?: string;
}

/** Sugar option → the argument it stands for, and the JS type it must have. */
export const ARGUMENT_SUGAR = {
  type: ['x-queue-type', 'string'],
  maxPriority: ['x-max-priority', 'number'],
  messageTtl: ['x-message-ttl', 'number'],
  expires: ['x-expires', 'number'],
  maxLength: ['x-max-length', 'number'],
  maxLengthBytes: ['x-max-length-bytes', 'number'],
  overflow: ['x-overflow', 'string'],
  deadLetterExchange: ['x-dead-letter-exchange', 'string'],
  deadLetterRoutingKey: ['x-dead-letter-routing-key', 'string'],
  deliveryLimit: ['x-delivery-limit', 'number'],
  singleActiveConsumer: ['x-single-active-consumer', 'boolean'],
  maxAge: ['x-max-age', 'string'],
  segmentBytes: ['x-stream-max-segment-size-bytes', 'number'],
  lvq: ['qpid.last_value_queue', 'boolean'],
  lvqKey: ['qpid.last_value_queue_key', 'string'],
} as const satisfies Record<string, readonly [string, 'string' | 'number' | 'boolean']>;

const FLAGS = ['passive', 'durable', 'exclusive', 'autoDelete'] as const;

/** A declaration after validation of its shape: flags resolved, one arguments table, a kind. */
export interface Declaration {
  readonly name: string;
  readonly kind: QueueKind;
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  /** Sugar merged in, `undefined` entries left out; frozen. */
  readonly arguments: Readonly<FieldTable>;
  /** The key header of a last-value queue. */
  readonly lvqKey?: string;
}

/**
 * Resolves declare options into a `Declaration`. Checks the option types (TypeError), merges
 * the sugar, and validates the arguments that choose the kind (406); the kind's own arguments
 * are validated by the kind.
 *
 * @param name the queue name, already checked (and generated when it was empty).
 * @param vhost the vhost the errors name.
 * @param named whether the caller gave a name: server-named queues default to exclusive,
 *   auto-delete and non-durable, as `@cloudamqp/amqp-client` declares them.
 */
export function resolveDeclaration(
  name: string,
  options: QueueDeclareOptions | undefined,
  named = true,
  vhost = DEFAULT_VHOST,
): Declaration & { readonly passive: boolean } {
  const o = options ?? {};
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new TypeError('queue options must be an object');
  }
  for (const key of Object.keys(o)) {
    if (
      key !== 'arguments' &&
      !(FLAGS as readonly string[]).includes(key) &&
      !Object.hasOwn(ARGUMENT_SUGAR, key)
    ) {
      throw new TypeError(`unknown queue option '${key}'`);
    }
  }
  const flag = (key: (typeof FLAGS)[number], fallback: boolean): boolean => {
    const value = o[key];
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') throw new TypeError(`option '${key}' must be a boolean`);
    return value;
  };
  const args = mergeArguments(o);
  const { kind, lvqKey } = chooseKind(name, vhost, args);
  return {
    name,
    kind,
    passive: flag('passive', false),
    durable: flag('durable', named),
    exclusive: flag('exclusive', !named),
    autoDelete: flag('autoDelete', !named),
    arguments: args,
    ...(lvqKey !== undefined && { lvqKey }),
  };
}

function mergeArguments(o: QueueDeclareOptions): Readonly<FieldTable> {
  const given = o.arguments;
  if (
    given !== undefined &&
    (typeof given !== 'object' || given === null || Array.isArray(given))
  ) {
    throw new TypeError('option arguments must be a plain object (an AMQP table)');
  }
  // No inherited keys: an argument named '__proto__' is stored, compared and persisted as itself.
  // The tags numbers came with over the wire name their types in errors, as RabbitMQ's do.
  const args: FieldTable = given === undefined ? emptyTable() : carryWireTypes(given, emptyTable());
  for (const [key, value] of Object.entries(given ?? {})) {
    if (value === undefined) continue;
    checkFieldValue(value, `arguments['${key}']`);
    args[key] = value as FieldValue;
  }
  for (const [option, [argument, type]] of Object.entries(ARGUMENT_SUGAR)) {
    const value = (o as Record<string, unknown>)[option];
    if (value === undefined) continue;
    if (typeof value !== type) {
      throw new TypeError(`option '${option}' must be a ${type}, got ${typeof value}`);
    }
    const existing = args[argument];
    if (existing !== undefined && !fieldEquals(existing, value as FieldValue)) {
      throw new TypeError(
        `option '${option}' (${describeField(value as FieldValue)}) and arguments['${argument}'] (${describeField(existing)}) differ`,
      );
    }
    args[argument] = value as FieldValue;
  }
  return Object.freeze(args);
}

function chooseKind(
  name: string,
  vhost: string,
  args: Readonly<FieldTable>,
): { kind: QueueKind; lvqKey?: string } {
  const type = args['x-queue-type'];
  // A stream ignores the LVQ arguments, as LavinMQ does (strict mode refuses them as unknown).
  if (type === 'stream') return { kind: 'stream' };
  if (type === 'quorum') return { kind: 'quorum' };
  if (type !== undefined && type !== 'classic') {
    throw invalidArg(
      'x-queue-type',
      queueResource({ name, vhost }),
      `must be 'classic', 'quorum' or 'stream', got ${describeValue(type)}`,
    );
  }
  const lvq = parseLvqDeclaration(args, queueResource({ name, vhost }));
  if (lvq !== undefined) return { kind: 'lvq', lvqKey: lvq.key };
  return { kind: args['x-max-priority'] === undefined ? 'classic' : 'priority' };
}

/** Refuses values an AMQP table cannot carry (functions, symbols, class instances). */
function checkFieldValue(value: unknown, path: string): void {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return;
    case 'object': {
      if (value === null || value instanceof Date || value instanceof Uint8Array) return;
      if (Array.isArray(value)) {
        for (const [i, item] of value.entries()) checkFieldValue(item, `${path}[${i}]`);
        return;
      }
      if (isPlainTable(value)) {
        for (const [k, v] of Object.entries(value)) checkFieldValue(v, `${path}.${k}`);
        return;
      }
    }
  }
  throw new TypeError(`${path} is not a value an AMQP table can carry`);
}

function describeValue(value: FieldValue): string {
  return typeof value === 'string' ? `'${value}'` : describeField(value);
}
