import { ContentTooLargeError, PreconditionFailedError } from '../errors.js';
import type {
  FieldTable,
  FieldValue,
  MessageProperties,
  PublishBody,
  StoredMessage,
} from './types.js';

/** Limits applied to every published message. */
export interface MessageLimits {
  /** Largest body in bytes (default 128 MiB, RabbitMQ's `max_message_size`). */
  readonly maxBodyBytes: number;
  /** Deepest nesting of header tables and arrays (default 32). */
  readonly maxHeaderDepth: number;
}

export const defaultMessageLimits: MessageLimits = {
  maxBodyBytes: 128 * 1024 * 1024,
  maxHeaderDepth: 32,
};

const EMPTY_PROPERTIES: Readonly<MessageProperties> = Object.freeze({});
const EMPTY_BODY = new Uint8Array(0);
const encoder = new TextEncoder();

/** Publish options that are not message properties (amqp-client accepts them beside them). */
const publishOptionKeys = new Set(['confirm', 'mandatory', 'routingKey', 'immediate']);

const stringProperties = [
  'contentType',
  'contentEncoding',
  'correlationId',
  'replyTo',
  'messageId',
  'type',
  'userId',
  'appId',
] as const;

/**
 * Turns what a publisher passed into an immutable `StoredMessage`: the body copied into bytes
 * (strings as UTF-8, other values as JSON with `contentType: application/json` unless set),
 * properties validated and deep-copied, everything frozen. Throws before anything is stored.
 */
export function normalizeMessage(
  body: PublishBody,
  properties: Readonly<MessageProperties> | undefined,
  exchange: string,
  routingKey: string,
  limits: MessageLimits = defaultMessageLimits,
): StoredMessage {
  let bytes: Uint8Array;
  let json = false;
  if (body instanceof Uint8Array) bytes = body.slice();
  else if (typeof body === 'string') bytes = encoder.encode(body);
  else if (body === null || body === undefined) bytes = EMPTY_BODY;
  else if (body instanceof ArrayBuffer) bytes = new Uint8Array(body.slice(0));
  else if (ArrayBuffer.isView(body)) {
    bytes = new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
  } else {
    const text = JSON.stringify(body);
    if (text === undefined) throw new TypeError(`a ${typeof body} cannot be published as a body`);
    bytes = encoder.encode(text);
    json = true;
  }
  if (bytes.byteLength > limits.maxBodyBytes) {
    throw new ContentTooLargeError(
      `message body of ${bytes.byteLength} bytes exceeds the limit of ${limits.maxBodyBytes}`,
    );
  }
  const props = normalizeProperties(properties, json, limits);
  return Object.freeze({ exchange, routingKey, properties: props, body: bytes });
}

function normalizeProperties(
  input: Readonly<MessageProperties> | undefined,
  json: boolean,
  limits: MessageLimits,
): Readonly<MessageProperties> {
  if (input === undefined || input === null) {
    return json ? Object.freeze({ contentType: 'application/json' }) : EMPTY_PROPERTIES;
  }
  if (typeof input !== 'object') throw new TypeError('message properties must be an object');
  const out: MessageProperties = {};
  for (const key of Object.keys(input) as (keyof MessageProperties)[]) {
    const value = input[key];
    if (value === undefined || publishOptionKeys.has(key)) continue;
    switch (key) {
      case 'headers':
        out.headers = copyTable(value as FieldTable, limits, 1, 'headers');
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
      case 'timestamp':
        if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
          throw new PreconditionFailedError('invalid timestamp: must be a valid Date');
        }
        out.timestamp = new Date(value.getTime());
        break;
      default:
        if ((stringProperties as readonly string[]).includes(key)) {
          if (typeof value !== 'string') {
            throw new PreconditionFailedError(`invalid ${key}: must be a string`);
          }
          checkShortString(value, key);
          (out as Record<string, unknown>)[key] = value;
        } else {
          throw new PreconditionFailedError(`unknown message property '${key}'`);
        }
    }
  }
  if (json && out.contentType === undefined) out.contentType = 'application/json';
  if (Object.keys(out).length === 0) return EMPTY_PROPERTIES;
  if (out.headers) Object.freeze(out.headers);
  return Object.freeze(out);
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

function copyTable(
  table: FieldTable,
  limits: MessageLimits,
  depth: number,
  path: string,
): FieldTable {
  if (typeof table !== 'object' || table === null || Array.isArray(table)) {
    throw new PreconditionFailedError(`invalid ${path}: must be a table (plain object)`);
  }
  const out: Record<string, FieldValue> = {};
  for (const key of Object.keys(table)) {
    checkShortString(key, `header name '${key.slice(0, 32)}…'`);
    const value = table[key];
    if (value === undefined) continue;
    out[key] = copyValue(value, limits, depth, `${path}.${key}`);
  }
  return out;
}

function copyValue(
  value: FieldValue,
  limits: MessageLimits,
  depth: number,
  path: string,
): FieldValue {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return value;
    case 'object':
      if (value === null) return null;
      if (depth >= limits.maxHeaderDepth) {
        throw new PreconditionFailedError(
          `invalid ${path}: nested deeper than ${limits.maxHeaderDepth} levels`,
        );
      }
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime()))
          throw new PreconditionFailedError(`invalid ${path}: invalid Date`);
        return new Date(value.getTime());
      }
      if (value instanceof Uint8Array) return value.slice();
      if (Array.isArray(value)) {
        return Object.freeze(
          value.map(
            (item: FieldValue, i: number): FieldValue =>
              copyValue(item === undefined ? null : item, limits, depth + 1, `${path}[${i}]`),
          ),
        );
      }
      if (
        Object.getPrototypeOf(value) !== Object.prototype &&
        Object.getPrototypeOf(value) !== null
      ) {
        throw new PreconditionFailedError(
          `invalid ${path}: a ${value.constructor?.name ?? 'class instance'} cannot be stored in a header`,
        );
      }
      return Object.freeze(copyTable(value as FieldTable, limits, depth + 1, path));
    default:
      throw new PreconditionFailedError(
        `invalid ${path}: a ${typeof value} cannot be stored in a header`,
      );
  }
}
