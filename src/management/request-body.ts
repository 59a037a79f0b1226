/**
 * Request bodies and query strings: untrusted input. A body is read up to a size limit (413
 * past it), must be a JSON object, and may hold no key that names an object's prototype.
 */
import type { IncomingMessage } from 'node:http';
import { badRequest, HttpError } from './http-error.js';

/** RabbitMQ's default `management.http_max_body_size`: 10 MiB. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * The body of `request`, read whole.
 * @throws HttpError 413 when it is longer than `limit`.
 */
export async function readBody(request: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'bad_request', `request body is larger than ${limit} bytes`);
}

/**
 * A body as a JSON object (an empty body: `{}`).
 * @throws HttpError 400 `not_json` for anything that is not JSON, `bad_request` for JSON that is
 *   not an object or holds a prototype key.
 */
export function jsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'), (key, v: unknown) => {
      if (PROTOTYPE_KEYS.has(key))
        throw new HttpError(400, 'bad_request', `key '${key}' is not allowed`);
      return v;
    });
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw badRequest('not_json');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest('not_json');
  }
  return value as Record<string, unknown>;
}

/**
 * A field of a body that must be of one type when present. As the plugin, a boolean or number
 * may come as its text (`"false"`, `"5"`: rabbitmqadmin sends them so).
 */
export function field<T>(
  body: Record<string, unknown>,
  name: string,
  type: 'string' | 'boolean' | 'number' | 'object',
  fallback: T,
): T {
  let value = Object.hasOwn(body, name) ? body[name] : undefined;
  if (value === undefined || value === null) return fallback;
  if (typeof value === 'string' && type === 'boolean' && (value === 'true' || value === 'false')) {
    value = value === 'true';
  } else if (typeof value === 'string' && type === 'number' && /^-?\d+(\.\d+)?$/.test(value)) {
    value = Number(value);
  }
  const ok =
    type === 'object' ? typeof value === 'object' && !Array.isArray(value) : typeof value === type;
  if (!ok) throw badRequest(`${name} must be a ${type === 'object' ? 'JSON object' : type}`);
  return value as T;
}

/** A query parameter's truth, as the plugin reads `if-empty=true`. */
export function queryFlag(query: URLSearchParams, name: string): boolean {
  return query.get(name) === 'true';
}
