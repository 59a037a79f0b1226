/**
 * `mqlite peek --url <management url> <queue>`: the messages of a queue of a running server,
 * through its management API's requeueing get (`ackmode: ack_requeue_true`): they stay in the
 * queue, marked redelivered, as RabbitMQ's "Get messages" leaves them.
 */
import { type CliIo, EXIT, UsageError } from './command.js';
import { ManagementRequestError, managementClient } from './management-client.js';
import { parseCommandArgs } from './parse-args.js';
import { writeJson } from './render.js';

interface Got {
  readonly payload: string;
  readonly payload_encoding: string;
  readonly exchange: string;
  readonly routing_key: string;
  readonly redelivered: boolean;
  readonly message_count: number;
  readonly properties: unknown;
}

export async function peekRemote(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      vhost: { type: 'string', default: '/' },
      limit: { type: 'string', default: '10' },
      json: { type: 'boolean', default: false },
    },
  });
  const queue = positionals[0];
  if (positionals.length !== 1 || queue === undefined) {
    throw new UsageError('peek --url takes a queue name');
  }
  const limit = Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new UsageError(`--limit must be a number of messages, got '${values.limit}'`);
  }
  const path = `/queues/${encodeURIComponent(values.vhost)}/${encodeURIComponent(queue)}`;
  try {
    const client = managementClient(values.url!);
    const got = (await client.request('POST', `${path}/get`, {
      count: limit,
      ackmode: 'ack_requeue_true',
      encoding: 'auto',
      truncate: 50_000,
    })) as Got[];
    if (values.json) {
      writeJson(io.stdout, { queue, shown: got });
      return EXIT.ok;
    }
    const out = [`${queue}: ${got.length} shown (requeued)`];
    for (const m of got) {
      out.push(
        '',
        `exchange '${m.exchange}', routing key '${m.routing_key}'${m.redelivered ? ', redelivered' : ''}`,
      );
      const properties = JSON.stringify(m.properties);
      if (properties !== '{}' && properties !== '[]') out.push(`  properties ${properties}`);
      out.push(m.payload_encoding === 'string' ? `  ${m.payload}` : `  (base64) ${m.payload}`);
    }
    io.stdout.write(`${out.join('\n')}\n`);
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof ManagementRequestError)) throw error;
    io.stderr.write(`mqlite peek: ${error.message}\n`);
    return EXIT.failure;
  }
}
