import { ContentTooLargeError, PreconditionFailedError } from '../errors.js';
import { copyInto } from '../storage/bytes.js';
import { emptyTable, isPlainTable } from '../table.js';
import { copyTimestamp } from './timestamp.js';
import type {
  FieldTable,
  FieldValue,
  MessageProperties,
  PublishBody,
  StoredMessage,
} from './types.js';
import { carryWireTypes } from './wire-types.js';

/** Limits applied to every published message. */
export interface MessageLimits {
  /**
   * Largest message in bytes, body and headers as encoded together (default 128 MiB, RabbitMQ's
   * default `max_message_size`).
   */
  readonly maxMessageBytes: number;
  /** Largest header table in bytes as encoded, nested tables included (default 1 MiB). */
  readonly maxHeaderBytes: number;
  /** Deepest nesting of header tables and arrays (default 32). */
  readonly maxHeaderDepth: number;
}

export const defaultMessageLimits: MessageLimits = {
  maxMessageBytes: 128 * 1024 * 1024,
  maxHeaderBytes: 1024 * 1024,
  maxHeaderDepth: 32,
};

/** The properties every message published without any shares (codecs test for it by identity). */
export const EMPTY_PROPERTIES: Readonly<MessageProperties> = Object.freeze({});
const JSON_PROPERTIES: Readonly<MessageProperties> = Object.freeze({
  contentType: 'application/json',
});
/** Properties that carry only a priority: one frozen object per value, shared like EMPTY. */
const PRIORITY_ONLY: Readonly<MessageProperties>[] = Array.from({ length: 256 }, (_, priority) =>
  Object.freeze({ priority }),
);

/** The shared properties of a message that carries only `priority` (an integer 0..255). */
export function priorityOnlyProperties(priority: number): Readonly<MessageProperties> {
  return PRIORITY_ONLY[priority] ?? Object.freeze({ priority });
}

/**
 * `properties` itself, or the shared object with the same content when it carries only a
 * priority: a queue that keeps many messages keeps one properties object per priority.
 */
export function sharedProperties(
  properties: Readonly<MessageProperties>,
): Readonly<MessageProperties> {
  const priority = properties.priority;
  if (priority === undefined) return properties;
  const shared = PRIORITY_ONLY[priority];
  if (shared === properties || shared === undefined) return properties;
  for (const key in properties) if (key !== 'priority') return properties;
  return shared;
}
const EMPTY_BODY = new Uint8Array(0);
const encoder = new TextEncoder();

/**
 * Small bodies are copied into shared slabs, as Node's Buffer pool does: one ArrayBuffer per
 * slab instead of one per message halves the cost of a publish and the memory of a stored small
 * message. A slab lives while any body in it does.
 */
const SLAB_BYTES = 64 * 1024;
const SLAB_MAX_BODY = 2048;
let slab = new ArrayBuffer(SLAB_BYTES);
let slabUsed = 0;

function slabView(length: number): Uint8Array {
  if (slabUsed + length > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    slabUsed = 0;
  }
  const view = new Uint8Array(slab, slabUsed, length);
  // Keep views 8-byte aligned so neighbouring bodies never share a word.
  slabUsed += (length + 7) & ~7;
  return view;
}

function copyBytes(source: Uint8Array): Uint8Array {
  const length = source.length;
  if (length === 0) return EMPTY_BODY;
  if (length > SLAB_MAX_BODY) return source.slice();
  const view = slabView(length);
  copyInto(view, source, 0);
  return view;
}

function utf8Bytes(text: string): Uint8Array {
  if (text.length === 0) return EMPTY_BODY;
  // A UTF-16 unit is at most 3 UTF-8 bytes, so this bound always fits.
  if (text.length * 3 > SLAB_MAX_BODY) return encoder.encode(text);
  if (slabUsed + text.length * 3 > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES);
    slabUsed = 0;
  }
  const view = new Uint8Array(slab, slabUsed, text.length * 3);
  const { written } = encoder.encodeInto(text, view);
  slabUsed += (written + 7) & ~7;
  return view.subarray(0, written);
}

const stringProperties = new Set([
  'contentType',
  'contentEncoding',
  'correlationId',
  'replyTo',
  'messageId',
  'type',
  'userId',
  'appId',
]);

/** Whether {@link normalizeMessage} copies a binary body or refers to the publisher's bytes. */
export type BodyOwnership = 'copy' | 'borrow';

/**
 * Turns what a publisher passed into a `StoredMessage`: the body copied into bytes (strings as
 * UTF-8, other values as JSON with `contentType: application/json` unless set), properties
 * validated and deep-copied. Throws before anything is stored.
 *
 * The result is owned by the queue: nothing the publisher still holds aliases it, and deliveries
 * hand out copies (`Message.properties`, `Message.body`), so it is never mutated. With
 * `'borrow'`, a binary body is the publisher's own bytes instead: only for a caller that encodes
 * the message before returning to the publisher and keeps nothing of it (see {@link ownBody}).
 */
export function normalizeMessage(
  body: PublishBody,
  properties: Readonly<MessageProperties> | undefined,
  exchange: string,
  routingKey: string,
  limits: MessageLimits = defaultMessageLimits,
  ownership: BodyOwnership = 'copy',
): StoredMessage {
  let bytes: Uint8Array;
  let json = false;
  if (body instanceof Uint8Array) bytes = ownership === 'copy' ? copyBytes(body) : body;
  else if (typeof body === 'string') bytes = utf8Bytes(body);
  else if (body === null || body === undefined) bytes = EMPTY_BODY;
  else if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
    const view =
      body instanceof ArrayBuffer
        ? new Uint8Array(body)
        : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    bytes = ownership === 'copy' ? copyBytes(view) : view;
  } else {
    checkJsonBody(body);
    bytes = utf8Bytes(JSON.stringify(body));
    json = true;
  }
  if (bytes.length > limits.maxMessageBytes) throw tooLarge(bytes.length, limits);
  const size = { headerBytes: 0 };
  const props =
    properties === undefined || properties === null
      ? json
        ? JSON_PROPERTIES
        : EMPTY_PROPERTIES
      : normalizeReused(properties, json, limits, size);
  if (bytes.length + size.headerBytes > limits.maxMessageBytes) {
    throw tooLarge(bytes.length + size.headerBytes, limits);
  }
  return { exchange, routingKey, properties: props, body: bytes };
}

function tooLarge(size: number, limits: MessageLimits): ContentTooLargeError {
  return new ContentTooLargeError(
    `message size ${size} is larger than max size ${limits.maxMessageBytes}`,
  );
}

/**
 * Refuses a body JSON would turn into something else: a Map or Set (stored as `{}`), a function,
 * symbol or bigint, a class instance without `toJSON`. Nested values are JSON's to render.
 */
function checkJsonBody(body: unknown): void {
  const type = typeof body;
  if (type === 'number' || type === 'boolean') return;
  if (type === 'object') {
    if (Array.isArray(body) || isPlainTable(body)) return;
    if (typeof (body as { toJSON?: unknown }).toJSON === 'function') return;
    const name = (body as object).constructor?.name ?? 'class instance';
    throw new TypeError(
      `a ${name} cannot be published as a body: pass bytes, a string, or a JSON value`,
    );
  }
  throw new TypeError(
    `a ${type} cannot be published as a body: pass bytes, a string, or a JSON value`,
  );
}

/**
 * `message` with a body of its own: for a message normalized with `'borrow'` that has to be kept
 * after all (its enqueue waits, or it is dead-lettered to another queue).
 */
export function ownBody(message: StoredMessage): StoredMessage {
  const { exchange, routingKey, properties } = message;
  return { exchange, routingKey, properties, body: copyBytes(message.body) };
}

/**
 * @internal Says `properties`, about to be published, will never change: publishing the same
 * object again reuses what normalizing it gave, one shared object (for the AMQP server, which
 * hands every message of a publisher sending the same property bytes the same object). Holds
 * for the next publish; the server says it before each.
 */
export function unchangingProperties<T extends object>(properties: T): T {
  lastNormalized.unchanging = properties;
  return properties;
}

/** The last unchanging properties normalized, and what normalizing them gave. */
const lastNormalized = {
  input: undefined as object | undefined,
  json: false,
  limits: undefined as MessageLimits | undefined,
  output: EMPTY_PROPERTIES as Readonly<MessageProperties>,
  headerBytes: 0,
  /** The properties said to be unchanging, not normalized yet. */
  unchanging: undefined as object | undefined,
};

function normalizeReused(
  input: Readonly<MessageProperties>,
  json: boolean,
  limits: MessageLimits,
  size: Size,
): Readonly<MessageProperties> {
  const last = lastNormalized;
  if (input === last.input && json === last.json && limits === last.limits) {
    size.headerBytes = last.headerBytes;
    return last.output;
  }
  const output = normalizeProperties(input, json, limits, size);
  if (input === last.unchanging) {
    last.input = input;
    last.json = json;
    last.limits = limits;
    last.output = output;
    last.headerBytes = size.headerBytes;
  }
  return output;
}

/** What normalizing counted: the encoded size of the headers. */
interface Size {
  headerBytes: number;
}

function normalizeProperties(
  input: Readonly<MessageProperties>,
  json: boolean,
  limits: MessageLimits,
  size: Size,
): Readonly<MessageProperties> {
  if (typeof input !== 'object') throw new TypeError('message properties must be an object');
  if (!json) {
    const shared = onlyPriority(input);
    if (shared !== undefined) return shared;
  }
  const out: MessageProperties = {};
  let count = 0;
  for (const key in input) {
    const value = (input as Record<string, unknown>)[key];
    // Undefined first: most slots of a wire publish's options are, and skip the own-key test.
    if (value === undefined || !Object.hasOwn(input, key)) continue;
    switch (key) {
      // Publish options, not properties: amqp-client accepts them beside the properties.
      case 'confirm':
      case 'mandatory':
      case 'routingKey':
      case 'immediate':
        continue;
      case 'headers':
        out.headers = copyTable(value as FieldTable, limits, 1, 'headers', size);
        break;
      case 'priority':
        if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 255) {
          throw new PreconditionFailedError(
            `invalid priority ${String(value)}: must be an integer 0..255`,
          );
        }
        out.priority = value as number;
        break;
      case 'deliveryMode':
        if (value !== 1 && value !== 2) {
          throw new PreconditionFailedError(
            `invalid deliveryMode ${String(value)}: must be 1 or 2`,
          );
        }
        out.deliveryMode = value;
        break;
      case 'expiration':
        out.expiration = normalizeExpiration(value);
        break;
      case 'timestamp': {
        const timestamp = value instanceof Date ? copyTimestamp(value) : undefined;
        if (timestamp === undefined) {
          throw new PreconditionFailedError(
            'invalid timestamp: must be a valid Date or an AmqpTimestamp',
          );
        }
        out.timestamp = timestamp;
        break;
      }
      default:
        if (!stringProperties.has(key)) {
          throw new PreconditionFailedError(`unknown message property '${key}'`);
        }
        if (typeof value !== 'string') {
          throw new PreconditionFailedError(`invalid ${key}: must be a string`);
        }
        checkShortString(value, key);
        (out as Record<string, unknown>)[key] = value;
    }
    count++;
  }
  if (json && out.contentType === undefined) {
    out.contentType = 'application/json';
    count++;
  }
  if (count === 0) return EMPTY_PROPERTIES;
  return count === 1 && out.priority !== undefined ? priorityOnlyProperties(out.priority) : out;
}

/**
 * The shared object for properties that hold a valid `priority` and nothing else, the usual
 * properties of a publish to a priority queue: no copy, no walk through every property rule.
 */
function onlyPriority(input: Readonly<MessageProperties>): Readonly<MessageProperties> | undefined {
  const priority = input.priority;
  if (typeof priority !== 'number' || !Object.hasOwn(input, 'priority')) return undefined;
  const shared = PRIORITY_ONLY[priority];
  if (shared === undefined) return undefined;
  let seen = false;
  for (const key in input) {
    if (key !== 'priority') return undefined;
    seen = true;
  }
  return seen ? shared : undefined;
}

function normalizeExpiration(value: unknown): string {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return value;
  throw new PreconditionFailedError(
    `invalid expiration '${String(value)}': must be a string of milliseconds`,
  );
}

function checkShortString(value: string, what: string): void {
  // Up to 85 UTF-16 units can never exceed 255 UTF-8 bytes: skip the byte count.
  if (value.length > 85 && Buffer.byteLength(value) > 255) {
    throw new PreconditionFailedError(`${what} is longer than 255 bytes`);
  }
}

/** Bytes a string takes encoded: exact past 85 UTF-16 units, its length (a lower bound) below. */
function stringBytes(value: string): number {
  return value.length > 85 ? Buffer.byteLength(value) : value.length;
}

/** Adds `bytes` to the header size and refuses the table once it passes the limit. */
function count(size: Size, bytes: number, limits: MessageLimits): void {
  size.headerBytes += bytes;
  if (size.headerBytes > limits.maxHeaderBytes) {
    throw new ContentTooLargeError(
      `message headers are larger than max size ${limits.maxHeaderBytes}`,
    );
  }
}

function copyTable(
  table: FieldTable,
  limits: MessageLimits,
  depth: number,
  path: string,
  size: Size,
): FieldTable {
  if (typeof table !== 'object' || table === null || Array.isArray(table)) {
    throw new PreconditionFailedError(`invalid ${path}: must be a table (plain object)`);
  }
  // No inherited keys: a '__proto__' or 'constructor' header is a key like any other.
  const out: Record<string, FieldValue> = emptyTable();
  for (const key in table) {
    if (!Object.hasOwn(table, key)) continue;
    const value = table[key];
    if (value === undefined) continue;
    if (key.length > 85) checkShortString(key, `header name '${key.slice(0, 32)}…'`);
    // A name, a type tag and the value: the size is counted as the table is walked, so a huge
    // table is refused after at most the limit's worth of work.
    count(size, key.length + 2, limits);
    // Scalars, the common case, inline; the path string is only built for nested values.
    const type = typeof value;
    if (type === 'string') {
      count(size, stringBytes(value as string), limits);
      out[key] = value;
    } else if (type === 'number' || type === 'boolean') {
      count(size, 8, limits);
      out[key] = value;
    } else out[key] = copyValue(value, limits, depth, `${path}.${key}`, size);
  }
  return carryWireTypes(table, out);
}

function copyValue(
  value: FieldValue,
  limits: MessageLimits,
  depth: number,
  path: string,
  size: Size,
): FieldValue {
  switch (typeof value) {
    case 'string':
      count(size, stringBytes(value), limits);
      return value;
    case 'number':
    case 'boolean':
    case 'bigint':
      count(size, 8, limits);
      return value;
    case 'object':
      if (value === null) return null;
      if (depth >= limits.maxHeaderDepth) {
        throw new PreconditionFailedError(
          `invalid ${path}: nested deeper than ${limits.maxHeaderDepth} levels`,
        );
      }
      if (value instanceof Date) {
        const timestamp = copyTimestamp(value);
        if (timestamp === undefined) {
          throw new PreconditionFailedError(`invalid ${path}: invalid Date`);
        }
        count(size, 8, limits);
        return timestamp;
      }
      if (value instanceof Uint8Array) {
        count(size, value.length + 4, limits);
        return value.slice();
      }
      if (Array.isArray(value)) {
        const items: FieldValue[] = [];
        for (let i = 0; i < value.length; i++) {
          const item = value[i] as FieldValue;
          count(size, 1, limits);
          items.push(
            copyValue(item === undefined ? null : item, limits, depth + 1, `${path}[${i}]`, size),
          );
        }
        return carryWireTypes(value, items);
      }
      if (!isPlainTable(value)) {
        throw new PreconditionFailedError(
          `invalid ${path}: a ${value.constructor?.name ?? 'class instance'} cannot be stored in a header`,
        );
      }
      return copyTable(value as FieldTable, limits, depth + 1, path, size);
    default:
      throw new PreconditionFailedError(
        `invalid ${path}: a ${typeof value} cannot be stored in a header`,
      );
  }
}
