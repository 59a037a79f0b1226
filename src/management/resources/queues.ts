/**
 * Queues: list, one, declare (PUT), delete (with `if-empty`/`if-unused`), purge (`DELETE
 * .../contents`) and get (`POST .../get` with RabbitMQ's `ackmode`s).
 */
import type { QueueInfo } from '../../broker/queue-info.js';
import type { Message } from '../../message/message.js';
import type { ManagementContext } from '../context.js';
import { attempt, badRequest, fromBrokerError, notFound } from '../http-error.js';
import { gotMessageJson } from '../message-json.js';
import { depthStats, messageStats } from '../message-stats.js';
import { field, queryFlag } from '../request-body.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { listing, param, single, vhostBroker } from './visible.js';

const TYPES: Readonly<Record<QueueInfo['kind'], string>> = {
  classic: 'classic',
  priority: 'classic',
  lvq: 'classic',
  quorum: 'quorum',
  stream: 'stream',
};

/** A queue as the plugin lists it. */
export function queueJson(context: ManagementContext, vhost: string, q: QueueInfo) {
  return {
    name: q.name,
    vhost,
    node: context.node,
    type: TYPES[q.kind] ?? 'classic',
    state: q.damaged ? 'down' : 'running',
    durable: q.durable,
    auto_delete: q.autoDelete,
    exclusive: q.exclusive,
    arguments: q.arguments,
    policy: q.policy ?? null,
    effective_policy_definition: {},
    ...depthStats(
      { messages: q.messages, ready: q.messagesReady, unacked: q.messagesUnacknowledged },
      context.rates,
      `queue\0${vhost}\0${q.name}`,
    ),
    message_bytes: q.bytes,
    consumers: q.consumers,
    message_stats: messageStats(
      context.state.counts.get(vhost)?.counted('queue', q.name),
      context.rates,
    ),
  };
}

function list(request: ApiRequest, context: ManagementContext): ApiAnswer {
  return listing(context, request, (broker, vhost) =>
    broker.queues().map((q) => queueJson(context, vhost, q)),
  );
}

function one(request: ApiRequest, context: ManagementContext): ApiAnswer {
  const name = param(request, 'name');
  return single(
    context,
    request,
    (broker) => broker.queues().find((q) => q.name === name),
    (broker, q) => queueJson(context, broker.vhost, q),
  );
}

async function declare(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = param(request, 'name');
  const body = await request.body();
  const existed = broker.hasQueue(name);
  await attempt(async () => {
    await broker.queue(name, {
      durable: field(body, 'durable', 'boolean', true),
      autoDelete: field(body, 'auto_delete', 'boolean', false),
      arguments: field(body, 'arguments', 'object', {}),
    });
  });
  return { status: existed ? 204 : 201 };
}

async function remove(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = param(request, 'name');
  if (!broker.hasQueue(name)) throw notFound();
  await attempt(async () => {
    await broker.deleteQueue(name, {
      ifEmpty: queryFlag(request.query, 'if-empty'),
      ifUnused: queryFlag(request.query, 'if-unused'),
    });
  });
  return { status: 204 };
}

async function purge(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  await attempt(async () => {
    await broker.purge(param(request, 'name'));
  });
  return { status: 204 };
}

const ACKMODES = [
  'ack_requeue_true',
  'ack_requeue_false',
  'reject_requeue_true',
  'reject_requeue_false',
];

/**
 * Takes up to `count` messages, then settles them all as `ackmode` says: requeued ones go back
 * only once every one was taken, so a count of 5 shows 5 different messages.
 */
async function get(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const name = param(request, 'name');
  const body = await request.body();
  const count = field(body, 'count', 'number', 1);
  const ackmode = field<string>(body, 'ackmode', 'string', '');
  const encoding = field<string>(body, 'encoding', 'string', 'auto');
  const truncate = field<number | undefined>(body, 'truncate', 'number', undefined);
  if (!ACKMODES.includes(ackmode))
    throw badRequest(`ackmode must be one of ${ACKMODES.join(', ')}`);
  if (encoding !== 'auto' && encoding !== 'base64')
    throw badRequest("encoding must be 'auto' or 'base64'");
  if (!Number.isInteger(count) || count < 1) throw badRequest('count must be a positive integer');
  if (truncate !== undefined && (!Number.isInteger(truncate) || truncate < 0)) {
    throw badRequest('truncate must be a whole number of bytes');
  }
  if (!broker.hasQueue(name)) throw notFound();
  const got: Message[] = [];
  try {
    const queue = await broker.queue(name, { passive: true });
    for (let i = 0; i < count; i++) {
      const message = await queue.get({ noAck: false });
      if (message === null) break;
      got.push(message);
    }
  } catch (error) {
    await settle(got, 'reject_requeue_true');
    throw fromBrokerError(error);
  }
  const left = broker.queues().find((q) => q.name === name)?.messagesReady ?? 0;
  const json = got.map((m, i) => gotMessageJson(m, left + got.length - i - 1, encoding, truncate));
  await settle(got, ackmode);
  return { status: 200, json };
}

async function settle(messages: readonly Message[], ackmode: string): Promise<void> {
  for (const message of messages) {
    if (ackmode === 'ack_requeue_false') await message.ack();
    else await message.nack(ackmode.endsWith('_true'));
  }
}

export const queueRoutes: readonly Route[] = [
  { path: '/api/queues', methods: { GET: { level: 'management', handle: list } } },
  { path: '/api/queues/:vhost', methods: { GET: { level: 'management', handle: list } } },
  {
    path: '/api/queues/:vhost/:name',
    methods: {
      GET: { level: 'management', handle: one },
      PUT: { level: 'management', handle: declare },
      DELETE: { level: 'management', handle: remove },
    },
  },
  {
    path: '/api/queues/:vhost/:name/contents',
    methods: { DELETE: { level: 'management', handle: purge } },
  },
  { path: '/api/queues/:vhost/:name/get', methods: { POST: { level: 'management', handle: get } } },
];
