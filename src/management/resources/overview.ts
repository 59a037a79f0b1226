/**
 * The node as a whole: `/api/overview`, `/api/whoami`, `/api/vhosts`, the health checks that
 * apply to one node, and `/api/aliveness-test/{vhost}`.
 */

import { MessageCounts } from '../../server/message-counts.js';
import type { ManagementContext } from '../context.js';
import { depthStats, messageStats } from '../message-stats.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { param, vhostBroker, visibleVhosts } from './visible.js';

/** The version the API reports itself as: the RabbitMQ whose API it follows. */
export const MANAGEMENT_VERSION = '3.10.0';

const ok: ApiAnswer = { status: 200, json: { status: 'ok' } };

function totals(context: ManagementContext, vhosts: readonly string[]): MessageCounts | undefined {
  const counted = vhosts.map((v) => context.state.counts.get(v)).filter((c) => c !== undefined);
  if (counted.length === 0) return undefined;
  if (counted.length === 1) return counted[0]!.totals;
  const sum = new MessageCounts();
  for (const { totals: t } of counted) {
    for (const key of Object.keys(sum) as (keyof MessageCounts)[]) sum[key] += t[key];
  }
  return sum;
}

function queueTotals(context: ManagementContext, vhosts: readonly string[]) {
  let messages = 0;
  let ready = 0;
  let unacked = 0;
  let queues = 0;
  let consumers = 0;
  for (const vhost of vhosts) {
    for (const q of context.broker(vhost).queues()) {
      messages += q.messages;
      ready += q.messagesReady;
      unacked += q.messagesUnacknowledged;
      consumers += q.consumers;
      queues++;
    }
  }
  return { messages, ready, unacked, queues, consumers };
}

function overview(request: ApiRequest, context: ManagementContext): ApiAnswer {
  const vhosts = visibleVhosts(context, request.user);
  const q = queueTotals(context, vhosts);
  const connections = [...context.state.connections].filter((c) => c.running);
  const channels = connections.reduce((n, c) => n + c.channels.size, 0);
  const exchanges = vhosts.reduce((n, v) => n + context.broker(v).exchanges().length, 0);
  const server = context.server;
  return {
    status: 200,
    json: {
      management_version: MANAGEMENT_VERSION,
      rabbitmq_version: MANAGEMENT_VERSION,
      product_name: 'mqlite',
      product_version: MANAGEMENT_VERSION,
      cluster_name: context.node,
      node: context.node,
      erlang_version: process.version,
      rates_mode: 'basic',
      message_stats: messageStats(
        totals(context, vhosts),
        context.rates,
        `message_stats\0${vhosts.join('\0')}`,
      ),
      queue_totals: depthStats(q, context.rates, `queue_totals\0${vhosts.join('\0')}`),
      object_totals: {
        connections: connections.length,
        channels,
        exchanges,
        queues: q.queues,
        consumers: q.consumers,
      },
      listeners: [
        { node: context.node, protocol: 'amqp', ip_address: server.host, port: server.port },
        ...(server.tlsPort === undefined
          ? []
          : [
              {
                node: context.node,
                protocol: 'amqp/ssl',
                ip_address: server.host,
                port: server.tlsPort,
              },
            ]),
      ],
    },
  };
}

function vhostJson(context: ManagementContext, vhost: string) {
  const q = queueTotals(context, [vhost]);
  return {
    name: vhost,
    description: '',
    tags: [],
    metadata: { description: '', tags: [] },
    default_queue_type: 'classic',
    tracing: false,
    cluster_state: { [context.node]: 'running' },
    ...depthStats(q, context.rates, `vhost\0${vhost}`),
    message_stats: messageStats(context.state.counts.get(vhost)?.totals, context.rates),
  };
}

function alarms(context: ManagementContext): ApiAnswer {
  const raised = context.server.alarms();
  if (raised.length === 0) return ok;
  return {
    status: 503,
    json: {
      status: 'failed',
      reason: 'resource alarm(s) in effect in the cluster',
      alarms: raised.map((a) => ({ node: context.node, resource: a.resource })),
    },
  };
}

function failed(reason: string): ApiAnswer {
  return { status: 503, json: { status: 'failed', reason } };
}

/** The aliveness test: declares `aliveness-test`, publishes a message to it and gets it back. */
async function aliveness(request: ApiRequest, context: ManagementContext): Promise<ApiAnswer> {
  const broker = vhostBroker(context, request, true);
  const queue = await broker.queue('aliveness-test', { durable: false });
  await broker.publish('', 'test_message', { routingKey: 'aliveness-test' });
  const message = await queue.get({ noAck: true });
  return message?.bodyToString() === 'test_message' ? ok : failed('aliveness test failed');
}

export const overviewRoutes: readonly Route[] = [
  { path: '/api/overview', methods: { GET: { level: 'management', handle: overview } } },
  {
    path: '/api/whoami',
    methods: {
      GET: {
        level: 'management',
        handle: (request) => ({
          status: 200,
          json: { name: request.user.name, tags: request.user.tags },
        }),
      },
    },
  },
  {
    path: '/api/vhosts',
    methods: {
      GET: {
        level: 'management',
        handle: (request, context) => ({
          status: 200,
          json: visibleVhosts(context, request.user).map((v) => vhostJson(context, v)),
        }),
      },
    },
  },
  {
    path: '/api/vhosts/:vhost',
    methods: {
      GET: {
        level: 'management',
        handle: (request, context) => {
          vhostBroker(context, request, false);
          return { status: 200, json: vhostJson(context, param(request, 'vhost')) };
        },
      },
    },
  },
  {
    path: '/api/health/checks/alarms',
    methods: { GET: { level: 'monitoring', handle: (_, c) => alarms(c) } },
  },
  {
    path: '/api/health/checks/local-alarms',
    methods: { GET: { level: 'monitoring', handle: (_, c) => alarms(c) } },
  },
  {
    path: '/api/health/checks/virtual-hosts',
    methods: { GET: { level: 'monitoring', handle: () => ok } },
  },
  {
    path: '/api/health/checks/node-is-quorum-critical',
    methods: { GET: { level: 'monitoring', handle: () => ok } },
  },
  {
    path: '/api/health/checks/node-is-mirror-sync-critical',
    methods: { GET: { level: 'monitoring', handle: () => ok } },
  },
  {
    path: '/api/health/checks/port-listener/:port',
    methods: {
      GET: {
        level: 'monitoring',
        handle: (request, context) => {
          const port = Number(param(request, 'port'));
          const { server } = context;
          return port === server.port || port === server.tlsPort
            ? { status: 200, json: { status: 'ok', port } }
            : failed(`No active listener on port ${param(request, 'port')}`);
        },
      },
    },
  },
  {
    path: '/api/health/checks/protocol-listener/:protocol',
    methods: {
      GET: {
        level: 'monitoring',
        handle: (request, context) => {
          const protocol = param(request, 'protocol');
          const served =
            protocol === 'amqp' ||
            protocol === 'amqp091' ||
            (protocol === 'amqp/ssl' && context.server.tlsPort !== undefined);
          return served
            ? { status: 200, json: { status: 'ok', protocol } }
            : failed(`No active listener for protocol ${protocol}`);
        },
      },
    },
  },
  {
    path: '/api/aliveness-test/:vhost',
    methods: { GET: { level: 'management', handle: aliveness } },
  },
];
