/**
 * `mqlite list queues|exchanges|connections|consumers`: what `rabbitmqctl list_queues` and its
 * kin show an operator, for a running server, through its management API.
 */
import { type CliIo, type Command, EXIT, UsageError } from './command.js';
import {
  DEFAULT_MANAGEMENT_URL,
  ManagementRequestError,
  managementClient,
  table,
} from './management-client.js';
import { parseCommandArgs } from './parse-args.js';
import { writeJson } from './render.js';

const USAGE = `Usage: mqlite list queues|exchanges|connections|consumers [--url <url>] [--vhost <v>] [--json]

Lists what a running server holds, through its management API (mqlite serve
--management-port, or RabbitMQ's management plugin), as rabbitmqctl list_* does:
  queues       name, messages, ready, unacked, consumers, publish and deliver rates
  exchanges    name, type, durable, auto-delete, internal
  connections  name, user, vhost, channels, client-provided name
  consumers    queue, consumer tag, channel, ack required, prefetch

Options:
  --url <url>    the management API, with credentials (default ${DEFAULT_MANAGEMENT_URL})
  --vhost <v>    only this vhost (default: every vhost the user sees)
  --json         print the API's JSON instead of a table
`;

type Row = Record<string, unknown>;
const rate = (stats: unknown, key: string): number =>
  (stats as Record<string, { rate?: number }> | undefined)?.[`${key}_details`]?.rate ?? 0;

/** Each kind's path, columns and cells. */
const KINDS: Readonly<
  Record<string, { path: string; columns: string[]; cells: (row: Row) => unknown[] }>
> = {
  queues: {
    path: '/queues',
    columns: [
      'vhost',
      'name',
      'messages',
      'ready',
      'unacked',
      'consumers',
      'publish/s',
      'deliver/s',
    ],
    cells: (q) => [
      q.vhost,
      q.name,
      q.messages,
      q.messages_ready,
      q.messages_unacknowledged,
      q.consumers,
      rate(q.message_stats, 'publish'),
      rate(q.message_stats, 'deliver_get'),
    ],
  },
  exchanges: {
    path: '/exchanges',
    columns: ['vhost', 'name', 'type', 'durable', 'auto_delete', 'internal'],
    cells: (e) => [
      e.vhost,
      e.name === '' ? '(AMQP default)' : e.name,
      e.type,
      e.durable,
      e.auto_delete,
      e.internal,
    ],
  },
  connections: {
    path: '/connections',
    columns: ['name', 'user', 'vhost', 'channels', 'client name'],
    cells: (c) => [c.name, c.user, c.vhost, c.channels, c.user_provided_name ?? ''],
  },
  consumers: {
    path: '/consumers',
    columns: ['vhost', 'queue', 'consumer tag', 'channel', 'ack required', 'prefetch'],
    cells: (c) => {
      const queue = c.queue as { name: string; vhost: string };
      return [
        queue.vhost,
        queue.name,
        c.consumer_tag,
        (c.channel_details as { name: string }).name,
        c.ack_required,
        c.prefetch_count,
      ];
    },
  },
};

export const list: Command = {
  summary: 'list the queues, exchanges, connections or consumers of a running server',
  usage: USAGE,
  async run(args: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseCommandArgs({
      args: [...args],
      allowPositionals: true,
      options: {
        url: { type: 'string', default: DEFAULT_MANAGEMENT_URL },
        vhost: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
    const what = positionals[0];
    if (positionals.length !== 1 || what === undefined || !Object.hasOwn(KINDS, what)) {
      throw new UsageError(`list what? One of ${Object.keys(KINDS).join(', ')}`);
    }
    const kind = KINDS[what]!;
    const vhost = values.vhost === undefined ? '' : `/${encodeURIComponent(values.vhost)}`;
    const path =
      what === 'connections' && vhost !== ''
        ? `/vhosts${vhost}/connections`
        : `${kind.path}${vhost}`;
    try {
      const rows = (await managementClient(values.url).request('GET', path)) as Row[];
      if (values.json) writeJson(io.stdout, rows);
      else io.stdout.write(table(kind.columns, rows.map(kind.cells)));
      return EXIT.ok;
    } catch (error) {
      if (!(error instanceof ManagementRequestError)) throw error;
      io.stderr.write(`mqlite list: ${error.message}\n`);
      return EXIT.failure;
    }
  },
};
