/**
 * `GET /metrics/detailed` of rabbitmq_prometheus: only the families asked for with `family=`
 * (none without one), per object, under `rabbitmq_detailed_` names (the exchange bindings under
 * `rabbitmq_cluster_`), and with `vhost=` only those vhosts' objects. The families served are
 * those made of what mqlite keeps: queue depths, consumers and bytes, and bindings per exchange.
 */
import type { ManagementContext } from '../context.js';
import type { Family } from './exposition.js';
import { family, identity, QUEUE_GAUGES, type QueueRow, queueRows } from './families.js';

/** The gauges of each queue family, by the names of `QUEUE_GAUGES`. */
const QUEUE_FAMILIES: Readonly<Record<string, readonly string[]>> = {
  queue_coarse_metrics: [
    'rabbitmq_queue_messages_ready',
    'rabbitmq_queue_messages_unacked',
    'rabbitmq_queue_messages',
  ],
  queue_consumer_count: ['rabbitmq_queue_consumers'],
  queue_metrics: ['rabbitmq_queue_consumers', 'rabbitmq_queue_messages_bytes'],
};

function queueFamily(rows: readonly QueueRow[], name: string): Family {
  const [, help, value] = QUEUE_GAUGES.find(([n]) => n === name)!;
  return family(
    name.replace(/^rabbitmq_/, 'rabbitmq_detailed_'),
    'gauge',
    help,
    rows.map(({ vhost, queue }) => [{ vhost, queue: queue.name }, value(queue)] as const),
  );
}

function exchangeBindings(context: ManagementContext, vhosts: readonly string[]): Family {
  return family(
    'rabbitmq_cluster_exchange_bindings',
    'gauge',
    'Number of bindings for an exchange. This value is cluster-wide.',
    vhosts.flatMap((vhost) =>
      context
        .broker(vhost)
        .exchanges()
        .filter((x) => x.name !== '')
        .map((x) => [{ vhost, exchange: x.name, type: x.type }, x.bindingCount] as const),
    ),
  );
}

/** The families `query` asks for, in the order asked, each once. */
export function detailedFamilies(context: ManagementContext, query: URLSearchParams): Family[] {
  const wanted = new Set(query.getAll('family'));
  const only = query.getAll('vhost');
  const vhosts = [...context.state.brokers]
    .filter(([vhost, broker]) => !broker.closed && (only.length === 0 || only.includes(vhost)))
    .map(([vhost]) => vhost);
  const rows = queueRows(context).filter((r) => vhosts.includes(r.vhost));
  const names = new Set<string>();
  const families = identity(context);
  for (const asked of wanted) {
    if (asked === 'exchange_bindings') families.push(exchangeBindings(context, vhosts));
    for (const name of QUEUE_FAMILIES[asked] ?? []) {
      if (names.has(name)) continue;
      names.add(name);
      families.push(queueFamily(rows, name));
    }
  }
  return families;
}
