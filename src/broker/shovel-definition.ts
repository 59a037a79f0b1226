/**
 * A dynamic shovel's definition: the value of RabbitMQ's `shovel` runtime parameter, its keys
 * spelled as `rabbitmqctl set_parameter shovel` and the definitions file spell them, checked as
 * RabbitMQ's shovel plugin checks them and refused with its words. Only the AMQP 0-9-1 protocol
 * is served (`src-protocol`/`dest-protocol` `amqp091`, the default).
 */

import { PreconditionFailedError } from '../errors.js';
import { emptyTable, isPlainTable } from '../table.js';

/** `ack-mode`: when the source learns a message is done with. */
export type ShovelAckMode = 'on-confirm' | 'on-publish' | 'no-ack';

/**
 * A shovel's definition, as RabbitMQ's `shovel` parameter spells it. `src-uri` and `dest-uri`
 * are `amqp://` or `amqps://` URIs (or lists of them, one chosen at random at each connect);
 * `amqp://` with no host is the broker the shovel runs in.
 */
export interface ShovelDefinition {
  readonly 'src-protocol'?: 'amqp091';
  readonly 'dest-protocol'?: 'amqp091';
  readonly 'src-uri': string | readonly string[];
  /** The queue to consume (declared durable when missing); or `src-exchange`. */
  readonly 'src-queue'?: string;
  readonly 'src-queue-args'?: Readonly<Record<string, unknown>>;
  /** An exchange to consume through a server-named queue bound with `src-exchange-key`. */
  readonly 'src-exchange'?: string;
  /** Default `#`: every routing key. */
  readonly 'src-exchange-key'?: string;
  readonly 'src-consumer-args'?: Readonly<Record<string, unknown>>;
  /** Unacknowledged messages at once (default 1000). */
  readonly 'src-prefetch-count'?: number;
  /** `never` (default), `queue-length` (as long when the shovel started), or a count. */
  readonly 'src-delete-after'?: 'never' | 'queue-length' | number;
  readonly 'dest-uri': string | readonly string[];
  /** The queue to publish to (declared durable when missing); or `dest-exchange`. */
  readonly 'dest-queue'?: string;
  readonly 'dest-queue-args'?: Readonly<Record<string, unknown>>;
  readonly 'dest-exchange'?: string;
  /** Default: each message's own routing key. */
  readonly 'dest-exchange-key'?: string;
  /** Add an `x-shovelled` header telling where the message came from. */
  readonly 'dest-add-forward-headers'?: boolean;
  /** Add an `x-shovelled-timestamp` header: when it was shovelled, in seconds. */
  readonly 'dest-add-timestamp-header'?: boolean;
  /** Properties to set on every message shovelled, as AMQP spells them (`delivery_mode`, ...). */
  readonly 'dest-publish-properties'?: Readonly<Record<string, unknown>>;
  /** Default `on-confirm`. */
  readonly 'ack-mode'?: ShovelAckMode;
  /** Seconds between a failure and the next attempt (default 5). */
  readonly 'reconnect-delay'?: number;
}

/**
 * 406: a shovel definition RabbitMQ would refuse, worded as it words it (`Validation failed:
 * ack-mode should be one of …`). `field` names the key at fault, when one is.
 */
export class ShovelDefinitionError extends PreconditionFailedError {
  override name = 'ShovelDefinitionError';
  /** The definition's key at fault, when one is. */
  readonly field: string | undefined;
  constructor(detail: string, field?: string) {
    super(`Validation failed: ${detail}`);
    this.field = field;
  }
}

type Check = (name: string, value: unknown) => string | undefined;

const binary: Check = (key, v) =>
  typeof v === 'string' ? undefined : `${key} should be binary, actually was ${erl(v)}`;
const bool: Check = (key, v) =>
  typeof v === 'boolean' ? undefined : `${key} should be boolean, actually was ${erl(v)}`;
const number: Check = (key, v) =>
  typeof v === 'number' && Number.isFinite(v)
    ? undefined
    : `${key} should be a number, actually was ${erl(v)}`;
const count: Check = (key, v) =>
  number(key, v) ??
  (Number.isInteger(v) && (v as number) >= 0
    ? undefined
    : `${key} should be a number greater than or equal to 0, actually was ${erl(v)}`);
const table: Check = (key, v) =>
  isPlainTable(v) ? undefined : `${key} should be a table, actually was ${erl(v)}`;
const uris: Check = (key, v) => {
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.length === 0) {
    return `${key} should be list, actually was ${erl(v)}`;
  }
  for (const uri of list) {
    if (typeof uri !== 'string') return `${key} should be list, actually was ${erl(v)}`;
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1];
    if (scheme !== 'amqp' && scheme !== 'amqps') {
      const shown = JSON.stringify(maskUri(uri));
      return scheme === undefined
        ? `${shown} not a valid URI: {no_scheme,${shown}}`
        : `${shown} not a valid URI: {{unexpected_uri_scheme,"${scheme}"},${shown}}`;
    }
    const why = integerParameters(uri);
    if (why !== undefined) return `${JSON.stringify(maskUri(uri))} not a valid URI: ${why}`;
  }
  return undefined;
};

/** The query parameters of a URI that RabbitMQ reads as integers. */
const INTEGER_PARAMETERS = ['heartbeat', 'connection_timeout', 'channel_max', 'frame_max'];

/** Why a URI's integer parameter is not one, in RabbitMQ's words; undefined when all are. */
function integerParameters(uri: string): string | undefined {
  const query = uri.indexOf('?');
  if (query < 0) return undefined;
  for (const [key, value] of new URLSearchParams(uri.slice(query + 1))) {
    if (!INTEGER_PARAMETERS.includes(key) || /^-?\d+$/.test(value)) continue;
    const shown = JSON.stringify(maskUri(uri));
    const v = JSON.stringify(value);
    return `{{invalid_amqp_params_parameter,${key},${v},[{"${key}",${v}}],{not_an_integer,${v}}},${shown}}`;
  }
  return undefined;
}
const oneOf =
  (values: readonly string[]): Check =>
  (key, v) =>
    typeof v === 'string' && values.includes(v)
      ? undefined
      : `${key} should be one of [${values.map((s) => `<<"${s}">>`).join(',')}], actually was ${erl(v)}`;
const deleteAfter: Check = (key, v) =>
  v === 'never' || v === 'queue-length' || (Number.isInteger(v) && (v as number) >= 0)
    ? undefined
    : `${key} should be a number greater than or equal to 0, "never" or "queue-length", actually was ${erl(v)}`;

/** Each key and its check, in the order RabbitMQ 3.10 checks them. */
const KEYS: Readonly<Record<keyof ShovelDefinition, Check>> = {
  'src-protocol': oneOf(['amqp091']),
  'dest-protocol': oneOf(['amqp091']),
  'src-uri': uris,
  'src-queue': binary,
  'src-queue-args': table,
  'src-exchange': binary,
  'src-exchange-key': binary,
  'src-consumer-args': table,
  'src-prefetch-count': count,
  'src-delete-after': deleteAfter,
  'dest-uri': uris,
  'dest-queue': binary,
  'dest-queue-args': table,
  'dest-exchange': binary,
  'dest-exchange-key': binary,
  'dest-add-forward-headers': bool,
  'dest-add-timestamp-header': bool,
  'dest-publish-properties': table,
  'ack-mode': oneOf(['no-ack', 'on-publish', 'on-confirm']),
  'reconnect-delay': number,
};

/** The older spellings RabbitMQ still reads, and the key each means. */
const LEGACY: Readonly<Record<string, keyof ShovelDefinition>> = {
  'add-forward-headers': 'dest-add-forward-headers',
  'add-timestamp-header': 'dest-add-timestamp-header',
  'publish-properties': 'dest-publish-properties',
  'delete-after': 'src-delete-after',
  'prefetch-count': 'src-prefetch-count',
};

/** `dest-publish-properties`: each AMQP property as RabbitMQ names it, and its check. */
const PROPERTIES: Readonly<Record<string, Check>> = {
  content_type: binary,
  content_encoding: binary,
  headers: table,
  delivery_mode: number,
  priority: number,
  correlation_id: binary,
  reply_to: binary,
  expiration: binary,
  message_id: binary,
  timestamp: number,
  type: binary,
  user_id: binary,
  app_id: binary,
  cluster_id: binary,
};

/**
 * Checks a shovel's name and definition as RabbitMQ's `set_parameter shovel` does, and returns
 * the definition with the older key spellings (`add-forward-headers`, …) under their `dest-`/`src-`
 * names.
 * @throws ShovelDefinitionError (406) for what RabbitMQ refuses, in its words; NotImplemented
 *   for the AMQP 1.0 protocol.
 */
export function checkShovel(name: unknown, value: unknown): ShovelDefinition {
  if (typeof name !== 'string' || name === '') {
    throw new TypeError('shovel name must be a non-empty string');
  }
  if (!isPlainTable(value)) {
    throw new ShovelDefinitionError(
      `shovel definition should be a table, actually was ${erl(value)}`,
    );
  }
  for (const side of ['src', 'dest']) {
    const protocol = value[`${side}-protocol`];
    if (protocol === 'amqp10') {
      throw new ShovelDefinitionError(
        `${side}-protocol amqp10 is not supported: mqlite shovels speak AMQP 0-9-1 (amqp091)`,
        `${side}-protocol`,
      );
    }
  }
  const out: Record<string, unknown> = emptyTable();
  const unknown: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    const canonical = Object.hasOwn(KEYS, key) ? key : LEGACY[key];
    if (canonical === undefined) unknown.push(`{<<"${key}">>,${erl(v)}}`);
    else out[canonical] ??= v;
  }
  if (unknown.length > 0) {
    throw new ShovelDefinitionError(`Unrecognised terms [${unknown.join(',')}] in ${name}`);
  }
  for (const key of ['src-uri', 'dest-uri']) {
    if (out[key] === undefined) {
      throw new ShovelDefinitionError(`Key "${key}" not found in ${name}`, key);
    }
  }
  for (const [key, check] of Object.entries(KEYS)) {
    if (out[key] === undefined) continue;
    const why = check(key, out[key]);
    if (why !== undefined) throw new ShovelDefinitionError(why, key);
  }
  either(out, 'src-exchange', 'src-queue', true);
  either(out, 'dest-exchange', 'dest-queue', false);
  const properties = out['dest-publish-properties'] as Record<string, unknown> | undefined;
  if (properties !== undefined) checkProperties(properties);
  return Object.freeze(out) as unknown as ShovelDefinition;
}

function either(out: Record<string, unknown>, exchange: string, queue: string, required: boolean) {
  if (out[exchange] !== undefined && out[queue] !== undefined) {
    throw new ShovelDefinitionError(`Cannot specify '${exchange}' and '${queue}'`, queue);
  }
  if (required && out[exchange] === undefined && out[queue] === undefined) {
    throw new ShovelDefinitionError(`Must specify '${exchange}' or '${queue}'`, queue);
  }
}

function checkProperties(properties: Record<string, unknown>): void {
  const unknown = Object.entries(properties).filter(([key]) => !Object.hasOwn(PROPERTIES, key));
  if (unknown.length > 0) {
    const terms = unknown.map(([k, v]) => `{<<"${k}">>,${erl(v)}}`).join(',');
    throw new ShovelDefinitionError(
      `Unrecognised terms [${terms}] in dest-publish-properties`,
      'dest-publish-properties',
    );
  }
  for (const [key, v] of Object.entries(properties)) {
    const why = PROPERTIES[key]!(key, v);
    if (why !== undefined) throw new ShovelDefinitionError(why, 'dest-publish-properties');
  }
}

/**
 * A URI with its password replaced by `***`: what states, errors and headers show, so that
 * credentials are never printed.
 */
export function maskUri(uri: string): string {
  return uri.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}

/** The URI without its credentials, as RabbitMQ writes it in the `x-shovelled` header. */
export function withoutCredentials(uri: string): string {
  return uri.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1');
}

/** A value as Erlang prints it in RabbitMQ's messages (`<<"text">>`, `[1,2]`, `#{…}`). */
function erl(value: unknown): string {
  if (typeof value === 'string') return `<<${JSON.stringify(maskUri(value.slice(0, 100)))}>>`;
  if (Array.isArray(value)) return `[${value.map(erl).join(',')}]`;
  if (isPlainTable(value)) {
    return `#{${Object.entries(value)
      .map(([k, v]) => `<<"${k}">> => ${erl(v)}`)
      .join(',')}}`;
  }
  if (value === null) return 'null';
  return String(value);
}
