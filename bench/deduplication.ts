/**
 * Deduplicated publish: messages per second published through a broker's fanout exchange to one
 * queue, plain beside deduplicating (`x-message-deduplication`) on the exchange and on the queue,
 * in the same run. Every message has a new id, so each one is looked up, cached and, past the
 * cache size, evicts the oldest: the most work deduplication does for a message it lets through.
 *
 * Standalone: `npx tsx bench/deduplication.ts`.
 */
import { Broker } from '../src/broker/broker.js';
import { bestOf, isMain, printResults } from './harness.js';
import type { BenchResult } from './types.js';

const MESSAGES = 50_000;
const DEDUP = { 'x-message-deduplication': true, 'x-cache-size': 10_000 };

async function publishRate(
  exchangeArgs: Record<string, unknown>,
  queueArgs: Record<string, unknown>,
): Promise<number> {
  let round = 0;
  let broker: Broker | undefined;
  let exchange: Awaited<ReturnType<Broker['exchange']>> | undefined;
  const ids = Array.from({ length: MESSAGES }, (_, i) => i);
  const rate = await bestOf(
    MESSAGES,
    async () => {
      const pending: Promise<void>[] = [];
      for (const id of ids) {
        pending.push(exchange!.publish('x', { headers: { 'x-deduplication-header': id } }));
      }
      await Promise.all(pending);
    },
    {
      async setup() {
        await broker?.close();
        broker = await Broker.open();
        exchange = await broker.exchange('bench', 'fanout', { arguments: exchangeArgs });
        await (await broker.queue(`q${round++}`, { arguments: queueArgs })).bind('bench');
      },
    },
  );
  await broker?.close();
  return rate;
}

export async function run(): Promise<BenchResult[]> {
  const note = `${MESSAGES} messages with distinct ids, fanout to 1 queue`;
  return [
    { name: 'publish, plain exchange', opsPerSec: await publishRate({}, {}), note },
    {
      name: 'publish, deduplicating exchange',
      opsPerSec: await publishRate(DEDUP, {}),
      note: `${note}, cache 10000`,
    },
    {
      name: 'publish, deduplicating queue',
      opsPerSec: await publishRate({}, DEDUP),
      note: `${note}, cache 10000`,
    },
  ];
}

if (isMain(import.meta.url)) printResults(await run());
