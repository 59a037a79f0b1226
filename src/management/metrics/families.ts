/**
 * The metrics, under rabbitmq_prometheus's names, types and help: queue depths and consumers
 * (summed, or per queue for `/metrics/per-object`), connections, channels, consumers, queues,
 * and the global message counters.
 */
import type { QueueInfo } from '../../broker/queue-info.js';
import { MessageCounts } from '../../server/message-counts.js';
import type { ManagementContext } from '../context.js';
import { MANAGEMENT_VERSION } from '../resources/overview.js';
import type { Family, MetricType } from './exposition.js';

export type QueueRow = { readonly vhost: string; readonly queue: QueueInfo };

/** The per-queue gauges: name, help, value. */
export const QUEUE_GAUGES: readonly (readonly [string, string, (q: QueueInfo) => number])[] = [
  [
    'rabbitmq_queue_messages_ready',
    'Messages ready to be delivered to consumers',
    (q) => q.messagesReady,
  ],
  [
    'rabbitmq_queue_messages_unacked',
    'Messages delivered to consumers but not yet acknowledged',
    (q) => q.messagesUnacknowledged,
  ],
  [
    'rabbitmq_queue_messages',
    'Sum of ready and unacknowledged messages - total queue depth',
    (q) => q.messages,
  ],
  [
    'rabbitmq_queue_messages_bytes',
    'Size in bytes of ready and unacknowledged messages',
    (q) => q.bytes,
  ],
  ['rabbitmq_queue_consumers', 'Consumers on a queue', (q) => q.consumers],
];

const GLOBAL_COUNTERS: readonly (readonly [string, string, (c: MessageCounts) => number])[] = [
  ['received', 'Total number of messages received from publishers', (c) => c.publish],
  [
    'delivered',
    'Total number of messages delivered to consumers',
    (c) => c.deliver + c.deliverNoAck + c.get + c.getNoAck,
  ],
  [
    'delivered_consume_manual_ack',
    'Total number of messages delivered to consumers using basic.consume with manual acknowledgment',
    (c) => c.deliver,
  ],
  [
    'delivered_consume_auto_ack',
    'Total number of messages delivered to consumers using basic.consume with automatic acknowledgment',
    (c) => c.deliverNoAck,
  ],
  [
    'delivered_get_manual_ack',
    'Total number of messages delivered to consumers using basic.get with manual acknowledgment',
    (c) => c.get,
  ],
  [
    'delivered_get_auto_ack',
    'Total number of messages delivered to consumers using basic.get with automatic acknowledgment',
    (c) => c.getNoAck,
  ],
  ['get_empty', 'Total number of times basic.get operations fetched no message', (c) => c.getEmpty],
  ['redelivered', 'Total number of messages redelivered to consumers', (c) => c.redeliver],
  ['acknowledged', 'Total number of messages acknowledged by consumers', (c) => c.ack],
  [
    'unroutable_returned',
    'Total number of messages published as mandatory into an exchange and returned to the publisher as unroutable',
    (c) => c.returnUnroutable,
  ],
];

export function family(
  name: string,
  type: MetricType,
  help: string,
  samples: Family['samples'],
): Family {
  return { name, type, help, samples };
}

export function queueRows(context: ManagementContext): QueueRow[] {
  return [...context.state.brokers].flatMap(([vhost, broker]) =>
    broker.closed ? [] : broker.queues().map((queue) => ({ vhost, queue })),
  );
}

function totals(context: ManagementContext): MessageCounts {
  const sum = new MessageCounts();
  for (const { totals: t } of context.state.counts.values()) {
    for (const key of Object.keys(sum) as (keyof MessageCounts)[]) sum[key] += t[key];
  }
  return sum;
}

/** `rabbitmq_build_info` and `rabbitmq_identity_info`, which every endpoint serves first. */
export function identity(context: ManagementContext): Family[] {
  return [
    family('rabbitmq_build_info', 'untyped', 'RabbitMQ & Erlang/OTP version info', [
      [
        { rabbitmq_version: MANAGEMENT_VERSION, product: 'mqlite', node_version: process.version },
        1,
      ],
    ]),
    family('rabbitmq_identity_info', 'untyped', 'RabbitMQ node & cluster identity info', [
      [{ rabbitmq_node: context.node, rabbitmq_cluster: context.node }, 1],
    ]),
  ];
}

/** Every family; per queue when `perObject`, else summed over queues, as the plugin does. */
export function families(context: ManagementContext, perObject: boolean): Family[] {
  const rows = queueRows(context);
  const connections = [...context.state.connections].filter((c) => c.running);
  const channels = connections.flatMap((c) => [...c.channels.values()].filter((ch) => ch.open));
  const consumers = channels.reduce((n, ch) => n + ch.consumers.list().length, 0);
  const counts = totals(context);
  const unroutableDropped = [...context.state.brokers.values()].reduce(
    (n, b) => n + (b.closed ? 0 : b.stats().unroutableDropped),
    0,
  );
  const amqp = { protocol: 'amqp091' };
  const published = (vhost: string, queue: QueueInfo) =>
    context.state.counts.get(vhost)?.counted('queue', queue.name)?.publish ?? 0;
  return [
    ...identity(context),
    ...QUEUE_GAUGES.map(([name, help, value]) =>
      family(
        name,
        'gauge',
        help,
        perObject
          ? rows.map(({ vhost, queue }) => [{ vhost, queue: queue.name }, value(queue)] as const)
          : [[{}, rows.reduce((n, r) => n + value(r.queue), 0)]],
      ),
    ),
    family('rabbitmq_connections', 'gauge', 'Connections currently open', [
      [{}, connections.length],
    ]),
    family('rabbitmq_channels', 'gauge', 'Channels currently open', [[{}, channels.length]]),
    family('rabbitmq_consumers', 'gauge', 'Consumers currently connected', [[{}, consumers]]),
    family('rabbitmq_queues', 'gauge', 'Queues available', [[{}, rows.length]]),
    family(
      'rabbitmq_queue_messages_published_total',
      'counter',
      'Total number of messages published to queues',
      perObject
        ? rows.map(({ vhost, queue }) => [{ vhost, queue: queue.name }, published(vhost, queue)])
        : [[{}, rows.reduce((n, r) => n + published(r.vhost, r.queue), 0)]],
    ),
    ...GLOBAL_COUNTERS.map(([name, help, value]) =>
      family(`rabbitmq_global_messages_${name}_total`, 'counter', help, [[amqp, value(counts)]]),
    ),
    family(
      'rabbitmq_global_messages_unroutable_dropped_total',
      'counter',
      'Total number of messages published as non-mandatory into an exchange and dropped as unroutable',
      [[amqp, unroutableDropped]],
    ),
  ];
}
