/**
 * What a shovel changes on a message it forwards, as RabbitMQ's shovel does: the properties of
 * `dest-publish-properties`, the `x-shovelled` header (`dest-add-forward-headers`: a table saying
 * where it came from, put before those of earlier hops) and `x-shovelled-timestamp`
 * (`dest-add-timestamp-header`: when, in seconds since the epoch).
 */
import { hostname } from 'node:os';
import type { ShovelDefinition } from '../broker/shovel-definition.js';
import { withoutCredentials } from '../broker/shovel-definition.js';
import type { FieldTable, FieldValue, MessageProperties } from '../message/types.js';
import { emptyTable } from '../table.js';

/** `dest-publish-properties` keys, as AMQP spells them, to the property each sets. */
const PROPERTY_NAMES: Readonly<Record<string, keyof MessageProperties>> = {
  content_type: 'contentType',
  content_encoding: 'contentEncoding',
  headers: 'headers',
  delivery_mode: 'deliveryMode',
  priority: 'priority',
  correlation_id: 'correlationId',
  reply_to: 'replyTo',
  expiration: 'expiration',
  message_id: 'messageId',
  timestamp: 'timestamp',
  type: 'type',
  user_id: 'userId',
  app_id: 'appId',
};

/** The node a shovel runs on, as `shovelled-by` names it (RabbitMQ writes its node name). */
const NODE = `mqlite@${hostname()}`;

/** The changes one shovel makes; `source`/`destination` are the URIs it is connected to. */
export function forwarder(
  name: string,
  vhost: string,
  definition: ShovelDefinition,
  source: string,
  destination: string,
  now: () => number,
): (properties: MessageProperties) => MessageProperties {
  const overrides = publishProperties(definition['dest-publish-properties']);
  const forward = definition['dest-add-forward-headers'] === true;
  const stamp = definition['dest-add-timestamp-header'] === true;
  const hop = forward ? forwardTable(name, vhost, definition, source, destination) : undefined;
  return (properties) => {
    const out: MessageProperties = { ...properties, ...overrides };
    if (!hop && !stamp) return out;
    const headers: FieldTable = emptyTable();
    Object.assign(headers, out.headers);
    if (hop) {
      const earlier = headers['x-shovelled'];
      headers['x-shovelled'] = [hop, ...(Array.isArray(earlier) ? earlier : [])];
    }
    if (stamp) headers['x-shovelled-timestamp'] = Math.floor(now() / 1000);
    out.headers = headers;
    return out;
  };
}

/** The `x-shovelled` table of one hop, its keys in the order RabbitMQ writes them. */
function forwardTable(
  name: string,
  vhost: string,
  definition: ShovelDefinition,
  source: string,
  destination: string,
): FieldTable {
  const entries: [string, FieldValue | undefined][] = [
    ['dest-exchange', definition['dest-exchange']],
    ['dest-exchange-key', definition['dest-exchange'] && definition['dest-exchange-key']],
    ['dest-queue', definition['dest-queue']],
    ['dest-uri', withoutCredentials(destination)],
    ['shovel-name', name],
    ['shovel-type', 'dynamic'],
    ['shovel-vhost', vhost],
    ['shovelled-by', NODE],
    ['src-exchange', definition['src-exchange']],
    ['src-exchange-key', definition['src-exchange'] && (definition['src-exchange-key'] ?? '#')],
    ['src-queue', definition['src-queue']],
    ['src-uri', withoutCredentials(source)],
  ];
  const table: FieldTable = emptyTable();
  for (const [key, value] of entries) if (value !== undefined) table[key] = value;
  return table;
}

function publishProperties(given: Readonly<Record<string, unknown>> | undefined) {
  const out: Record<string, unknown> = emptyTable();
  for (const [key, value] of Object.entries(given ?? {})) {
    const property = PROPERTY_NAMES[key];
    if (property === undefined) continue; // cluster_id: not a property clients still send
    out[property] = property === 'timestamp' ? new Date((value as number) * 1000) : value;
  }
  return out as MessageProperties;
}
