/**
 * Connections, channels and consumers: list and one; `DELETE /api/connections/{name}` closes a
 * connection with 320 CONNECTION_FORCED, its reason the `X-Reason` header, as RabbitMQ does.
 * Users without the monitoring tag see their own connections only.
 */
import type { AmqpChannel } from '../../server/channel.js';
import type { AmqpConnection } from '../../server/connection.js';
import { reaches } from '../auth.js';
import type { ManagementContext } from '../context.js';
import { notFound } from '../http-error.js';
import type { ApiAnswer, ApiRequest, Route } from '../router.js';
import { param, vhostBroker } from './visible.js';

/** RabbitMQ's connection name: `client address:port -> server address:port`. */
export function connectionName(context: ManagementContext, c: AmqpConnection): string {
  const port = c.tls ? context.server.tlsPort : context.server.port;
  return `${c.peer} -> ${context.server.host}:${port}`;
}

function peerOf(c: AmqpConnection): { host: string; port: number } {
  const colon = c.peer.lastIndexOf(':');
  return {
    host: c.peer.slice(0, colon).replace(/^\[|\]$/g, ''),
    port: Number(c.peer.slice(colon + 1)),
  };
}

function visible(request: ApiRequest, context: ManagementContext): AmqpConnection[] {
  const vhost = request.params.get('vhost');
  if (vhost !== undefined) vhostBroker(context, request, false);
  const all = reaches(request.user, 'monitoring');
  return [...context.state.connections].filter(
    (c) =>
      c.running &&
      (vhost === undefined || c.vhost === vhost) &&
      (all || c.user === request.user.name),
  );
}

function connectionJson(context: ManagementContext, c: AmqpConnection) {
  const peer = peerOf(c);
  return {
    name: connectionName(context, c),
    node: context.node,
    type: 'network',
    state: 'running',
    user: c.user,
    vhost: c.vhost,
    protocol: 'AMQP 0-9-1',
    auth_mechanism: 'PLAIN',
    ssl: c.tls,
    host: context.server.host,
    port: c.tls ? context.server.tlsPort : context.server.port,
    peer_host: peer.host,
    peer_port: peer.port,
    channels: c.channels.size,
    channel_max: context.state.limits.channelMax,
    frame_max: c.frameMax,
    connected_at: c.connectedAt,
    client_properties: c.clientProperties,
    ...(c.clientName !== undefined && { user_provided_name: c.clientName }),
  };
}

function channelName(context: ManagementContext, c: AmqpConnection, channel: AmqpChannel): string {
  return `${connectionName(context, c)} (${channel.id})`;
}

function channelDetails(context: ManagementContext, c: AmqpConnection, channel: AmqpChannel) {
  const peer = peerOf(c);
  return {
    name: channelName(context, c, channel),
    number: channel.id,
    connection_name: connectionName(context, c),
    node: context.node,
    peer_host: peer.host,
    peer_port: peer.port,
    user: c.user,
  };
}

function channelJson(context: ManagementContext, c: AmqpConnection, channel: AmqpChannel) {
  const consumers = channel.consumers;
  return {
    name: channelName(context, c, channel),
    number: channel.id,
    node: context.node,
    state: 'running',
    user: c.user,
    vhost: c.vhost,
    connection_details: { name: connectionName(context, c), ...peerOf(c) },
    consumer_count: consumers.list().length,
    prefetch_count: consumers.prefetch.consumer,
    global_prefetch_count: consumers.prefetch.global,
    messages_unacknowledged: consumers.unacked,
  };
}

function channelsOf(connections: readonly AmqpConnection[]) {
  return connections.flatMap((c) =>
    [...c.channels.values()].filter((ch) => ch.open).map((ch) => [c, ch] as const),
  );
}

function consumersJson(context: ManagementContext, connections: readonly AmqpConnection[]) {
  return channelsOf(connections).flatMap(([c, channel]) =>
    channel.consumers.list().map((consumer) => ({
      consumer_tag: consumer.tag,
      queue: { name: consumer.queue, vhost: c.vhost },
      channel_details: channelDetails(context, c, channel),
      ack_required: consumer.ackRequired,
      exclusive: consumer.exclusive,
      prefetch_count: consumer.prefetch,
      arguments: consumer.arguments,
      active: true,
      activity_status: 'up',
    })),
  );
}

function namedConnection(request: ApiRequest, context: ManagementContext): AmqpConnection {
  const name = param(request, 'name');
  const found = visible(request, context).find((c) => connectionName(context, c) === name);
  if (!found) throw notFound();
  return found;
}

function closeConnection(request: ApiRequest, context: ManagementContext): ApiAnswer {
  const connection = namedConnection(request, context);
  const reason = request.headers['x-reason'];
  const text =
    typeof reason === 'string' && reason !== '' ? reason : 'Closed via management plugin';
  void connection.close(320, text);
  return { status: 204 };
}

const get = (handle: (request: ApiRequest, context: ManagementContext) => ApiAnswer) => ({
  GET: { level: 'management' as const, handle },
});

export const connectionRoutes: readonly Route[] = [
  {
    path: '/api/connections',
    methods: get((r, c) => ({ status: 200, json: visible(r, c).map((x) => connectionJson(c, x)) })),
  },
  {
    path: '/api/vhosts/:vhost/connections',
    methods: get((r, c) => ({ status: 200, json: visible(r, c).map((x) => connectionJson(c, x)) })),
  },
  {
    path: '/api/connections/:name',
    methods: {
      ...get((r, c) => ({ status: 200, json: connectionJson(c, namedConnection(r, c)) })),
      DELETE: { level: 'management', handle: closeConnection },
    },
  },
  {
    path: '/api/connections/:name/channels',
    methods: get((r, c) => ({
      status: 200,
      json: channelsOf([namedConnection(r, c)]).map(([x, ch]) => channelJson(c, x, ch)),
    })),
  },
  {
    path: '/api/channels',
    methods: get((r, c) => ({
      status: 200,
      json: channelsOf(visible(r, c)).map(([x, ch]) => channelJson(c, x, ch)),
    })),
  },
  {
    path: '/api/vhosts/:vhost/channels',
    methods: get((r, c) => ({
      status: 200,
      json: channelsOf(visible(r, c)).map(([x, ch]) => channelJson(c, x, ch)),
    })),
  },
  {
    path: '/api/channels/:name',
    methods: get((r, c) => {
      const name = param(r, 'name');
      const found = channelsOf(visible(r, c)).find(([x, ch]) => channelName(c, x, ch) === name);
      if (!found) throw notFound();
      return { status: 200, json: channelJson(c, found[0], found[1]) };
    }),
  },
  {
    path: '/api/consumers',
    methods: get((r, c) => ({ status: 200, json: consumersJson(c, visible(r, c)) })),
  },
  {
    path: '/api/consumers/:vhost',
    methods: get((r, c) => ({ status: 200, json: consumersJson(c, visible(r, c)) })),
  },
];
