/**
 * Sender-selected distribution, as RabbitMQ offers it: the `CC` and `BCC` headers of a message,
 * each an array of strings, name routing keys the message is routed by besides its own, on the
 * same exchange. `CC` is delivered with the message; `BCC` is removed before it is stored.
 */
import { PreconditionFailedError } from '../errors.js';
import { amqpTypeName } from '../exchanges/field-values.js';
import type { FieldTable, FieldValue, StoredMessage } from '../message/types.js';
import { emptyTable } from '../table.js';

const ROUTING_HEADERS = ['CC', 'BCC'] as const;

/**
 * The routing keys of a message: its own, then those its `CC` and `BCC` headers list (elements
 * that are not strings are ignored, as RabbitMQ ignores them). Just the key when there are none.
 * @throws PreconditionFailedError (406) when `CC` or `BCC` is not an array, worded as RabbitMQ
 *   refuses it.
 */
export function routingKeysOf(
  routingKey: string,
  headers: Readonly<FieldTable> | undefined,
): string | string[] {
  return collectKeys(routingKey, headers, (header, value) => {
    throw new PreconditionFailedError(
      `invalid message: {unacceptable_type_in_header,"${header}",${amqpTypeName(value)}}`,
    );
  });
}

/**
 * The routing keys of a dead-lettered message: its key and its `CC` (the dead-letter copy has
 * no `CC` when a dead-letter routing key replaced its key). A header that is not an array, which
 * a message published to a queue directly may carry, adds nothing.
 */
export function deadLetterRoutingKeys(
  routingKey: string,
  headers: Readonly<FieldTable> | undefined,
): string | string[] {
  return collectKeys(routingKey, headers, () => {});
}

function collectKeys(
  routingKey: string,
  headers: Readonly<FieldTable> | undefined,
  notArray: (header: string, value: FieldValue) => void,
): string | string[] {
  if (headers === undefined || (headers.CC === undefined && headers.BCC === undefined)) {
    return routingKey;
  }
  const keys = [routingKey];
  for (const header of ROUTING_HEADERS) {
    const value = headers[header];
    if (value === undefined) continue;
    if (!Array.isArray(value)) notArray(header, value as FieldValue);
    else for (const key of value) if (typeof key === 'string') keys.push(key);
  }
  return keys;
}

/** The message as its queues store it: without its `BCC` header. */
export function withoutBcc(message: StoredMessage): StoredMessage {
  const headers = message.properties.headers;
  if (headers?.BCC === undefined) return message;
  const kept: FieldTable = emptyTable();
  for (const [name, value] of Object.entries(headers)) if (name !== 'BCC') kept[name] = value;
  return { ...message, properties: { ...message.properties, headers: kept } };
}
