/**
 * Messages as the API carries them: properties under RabbitMQ's names (`content_type`,
 * `delivery_mode`, ...), payloads as `string` or `base64`, and a got message's JSON.
 */
import type { Message } from '../message/message.js';
import type { MessageProperties } from '../message/types.js';
import { badRequest } from './http-error.js';

/** RabbitMQ's property names and mqlite's. */
const NAMES: readonly (readonly [string, keyof MessageProperties])[] = [
  ['content_type', 'contentType'],
  ['content_encoding', 'contentEncoding'],
  ['headers', 'headers'],
  ['delivery_mode', 'deliveryMode'],
  ['priority', 'priority'],
  ['correlation_id', 'correlationId'],
  ['reply_to', 'replyTo'],
  ['expiration', 'expiration'],
  ['message_id', 'messageId'],
  ['timestamp', 'timestamp'],
  ['type', 'type'],
  ['user_id', 'userId'],
  ['app_id', 'appId'],
];

const NUMERIC = new Set(['delivery_mode', 'priority', 'timestamp']);

/**
 * A publish's `properties` as message properties.
 * @throws HttpError 400 for an unknown property or one of the wrong type.
 */
export function propertiesFromJson(value: Record<string, unknown>): MessageProperties {
  const properties: Record<string, unknown> = {};
  for (const [key, given] of Object.entries(value)) {
    const entry = NAMES.find(([api]) => api === key);
    if (entry === undefined) throw badRequest(`unknown property '${key}'`);
    if (key === 'headers') {
      if (typeof given !== 'object' || given === null || Array.isArray(given)) {
        throw badRequest('headers must be a JSON object');
      }
    } else if (NUMERIC.has(key) ? typeof given !== 'number' : typeof given !== 'string') {
      throw badRequest(`property '${key}' must be a ${NUMERIC.has(key) ? 'number' : 'string'}`);
    }
    properties[entry[1]] = key === 'timestamp' ? new Date((given as number) * 1000) : given;
  }
  return properties as MessageProperties;
}

/** Message properties under RabbitMQ's names; `[]` when there are none, as the plugin writes it. */
export function propertiesToJson(
  properties: Readonly<MessageProperties>,
): Record<string, unknown> | [] {
  const json: Record<string, unknown> = {};
  for (const [api, own] of NAMES) {
    const value = properties[own];
    if (value === undefined) continue;
    json[api] = value instanceof Date ? Math.floor(value.getTime() / 1000) : jsonValue(value);
  }
  return Object.keys(json).length === 0 ? [] : json;
}

function jsonValue(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return Math.floor(value.getTime() / 1000);
  if (Array.isArray(value)) return value.map(jsonValue);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonValue(v)]));
  }
  return value;
}

/**
 * A publish's payload as bytes.
 * @throws HttpError 400 for an encoding other than `string` or `base64`.
 */
export function payloadBytes(payload: string, encoding: string): Uint8Array {
  if (encoding === 'string') return Buffer.from(payload, 'utf8');
  if (encoding === 'base64') return Buffer.from(payload, 'base64');
  throw badRequest(`payload_encoding must be 'string' or 'base64', got '${encoding}'`);
}

/** A got message as `POST /api/queues/{vhost}/{name}/get` answers it. */
export function gotMessageJson(
  message: Message,
  messageCount: number,
  encoding: 'auto' | 'base64',
  truncate: number | undefined,
): Record<string, unknown> {
  const body = Buffer.from(message.body);
  const shown = truncate === undefined ? body : body.subarray(0, truncate);
  const text = shown.toString('utf8');
  const asString = encoding === 'auto' && Buffer.from(text, 'utf8').equals(shown);
  return {
    payload_bytes: body.length,
    redelivered: message.redelivered,
    exchange: message.exchange,
    routing_key: message.routingKey,
    message_count: messageCount,
    properties: propertiesToJson(message.storedProperties),
    payload: asString ? text : shown.toString('base64'),
    payload_encoding: asString ? 'string' : 'base64',
  };
}
