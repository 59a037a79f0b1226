/**
 * Exchanges: list, one, declare (PUT), delete (with `if-unused`) and publish (`POST
 * .../publish`, answering `routed`). The default exchange `""` is `amq.default` in paths.
 */

import { exchangeDefinition } from '../../broker/definitions.js';
import { NoRouteError } from '../../errors.js';
import type { ExchangeInfo } from '../../exchanges/types.js';
import type { ManagementContext } from '../context.js';
import { attempt, badRequest, fromBrokerError, notFound } from '../http-error.js';
import { payloadBytes, propertiesFromJson } from '../message-json.js';
import { exchangeStats } from '../message-stats.js';
import { field, queryFlag } from '../request-body.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { listing, param, single, vhostBroker } from './visible.js';

/** The broker's name of the exchange a path names. */
export function exchangeName(request: ApiRequest, key = 'name'): string {
  const name = param(request, key);
  return name === 'amq.default' ? '' : name;
}

function exchangeJson(context: ManagementContext, vhost: string, e: ExchangeInfo) {
  return {
    ...exchangeDefinition(e, vhost),
    policy: null,
    user_who_performed_action: 'rmq-internal',
    message_stats: exchangeStats(
      context.state.counts.get(vhost)?.counted('exchange', e.name),
      context.rates,
    ),
  };
}

function list(request: ApiRequest, context: ManagementContext): ApiAnswer {
  return listing(context, request, (broker, vhost) =>
    broker.exchanges().map((e) => exchangeJson(context, vhost, e)),
  );
}

function one(request: ApiRequest, context: ManagementContext): ApiAnswer {
  return single(
    context,
    request,
    (broker) => broker.exchangeNamed(exchangeName(request)),
    (broker, e) => exchangeJson(context, broker.vhost, e),
  );
}

async function declare(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = exchangeName(request);
  const body = await request.body();
  const type = field<string | undefined>(body, 'type', 'string', undefined);
  if (type === undefined) throw badRequest('[{key_missing,type}]');
  const existed = broker.exchangeNamed(name) !== undefined;
  await attempt(async () => {
    await broker.exchange(name, type, {
      durable: field(body, 'durable', 'boolean', true),
      autoDelete: field(body, 'auto_delete', 'boolean', false),
      internal: field(body, 'internal', 'boolean', false),
      arguments: field(body, 'arguments', 'object', {}),
    });
  });
  return { status: existed ? 204 : 201 };
}

async function remove(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = exchangeName(request);
  if (broker.exchangeNamed(name) === undefined) throw notFound();
  await attempt(async () => {
    await broker.deleteExchange(name, { ifUnused: queryFlag(request.query, 'if-unused') });
  });
  return { status: 204 };
}

async function publish(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = exchangeName(request);
  if (broker.exchangeNamed(name) === undefined) throw notFound();
  const body = await request.body();
  const routingKey = field<string | undefined>(body, 'routing_key', 'string', undefined);
  const payload = field<string | undefined>(body, 'payload', 'string', undefined);
  if (routingKey === undefined) throw badRequest('[{key_missing,routing_key}]');
  if (payload === undefined) throw badRequest('[{key_missing,payload}]');
  const bytes = payloadBytes(payload, field(body, 'payload_encoding', 'string', 'string'));
  const properties = propertiesFromJson(field(body, 'properties', 'object', {}));
  const counts = context.state.counts.get(broker.vhost);
  try {
    await broker.publish(name, bytes, { ...properties, routingKey, mandatory: true });
  } catch (error) {
    if (error instanceof NoRouteError) return { status: 200, json: { routed: false } };
    throw fromBrokerError(error);
  } finally {
    if (counts !== undefined) {
      counts.totals.publish++;
      counts.exchange(name).publish++;
    }
  }
  return { status: 200, json: { routed: true } };
}

export const exchangeRoutes: readonly Route[] = [
  { path: '/api/exchanges', methods: { GET: { level: 'management', handle: list } } },
  { path: '/api/exchanges/:vhost', methods: { GET: { level: 'management', handle: list } } },
  {
    path: '/api/exchanges/:vhost/:name',
    methods: {
      GET: { level: 'management', handle: one },
      PUT: { level: 'management', handle: declare },
      DELETE: { level: 'management', handle: remove },
    },
  },
  {
    path: '/api/exchanges/:vhost/:name/publish',
    methods: { POST: { level: 'management', handle: publish } },
  },
];
