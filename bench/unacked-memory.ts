/**
 * The AMQP server's memory per unacknowledged message: a consumer with prefetch 0 (unlimited)
 * that never acks takes `MESSAGES` persistent 100-byte messages, published with confirms, from
 * a server on fs storage (`mqlite serve --data`) in a process of its own; then the queue is
 * deleted. Figures: the server's resident memory grown per unacked message, what stays after
 * the delete, and the same on LavinMQ (`LAVINMQ_PORT`, default 5680; start it with
 * `../shared/lavinmq/start 5680`) measured in the same run.
 *
 * Standalone: `node --expose-gc --import tsx bench/unacked-memory.ts` (`BENCH_SCALE=0.1` for a
 * quick run).
 */
import { readFile } from 'node:fs/promises';
import amqplib from 'amqplib';
import { isMain, LAVINMQ_PORT, printResults, SCALE } from './harness.js';
import type { BenchResult } from './types.js';
import { rssOf, spawnServer } from './wire/server-process.js';

const MESSAGES = Math.round(1_000_000 * SCALE);
const BODY = Buffer.alloc(100, 'x');
/** Confirms awaited per batch of publishes. */
const WINDOW = 5000;

interface Figures {
  /** Resident memory before, with every message delivered and unacked, and after the delete. */
  readonly before: number;
  readonly unacked: number;
  readonly deleted: number;
  /** Messages delivered and unacked when `unacked` was read. */
  readonly delivered: number;
}

/** How long deliveries may stall before the server is taken to deliver no more. */
const STALL_MS = 10_000;

/** Runs the scenario against `url`, reading the server's memory with `rss`. */
async function scenario(url: string, rss: () => Promise<number>): Promise<Figures> {
  const queue = `bench-unacked-${process.pid}`;
  const before = await rss();
  const consumer = await amqplib.connect(url);
  const consuming = await consumer.createChannel();
  await consuming.assertQueue(queue, { durable: true });
  let delivered = 0;
  // amqplib calls back with null for the server's basic.cancel once the queue is deleted: that is
  // no delivery.
  await consuming.consume(queue, (message) => {
    if (message) delivered++;
  });
  const publisher = await amqplib.connect(url);
  const publishing = await publisher.createConfirmChannel();
  for (let sent = 0; sent < MESSAGES; ) {
    const end = Math.min(MESSAGES, sent + WINDOW);
    for (; sent < end; sent++) publishing.sendToQueue(queue, BODY, { persistent: true });
    await publishing.waitForConfirms();
  }
  // A server may stop short of the whole queue: LavinMQ delivers at most 65,535 unacked.
  for (let seen = -1, since = Date.now(); delivered < MESSAGES; ) {
    if (delivered !== seen) [seen, since] = [delivered, Date.now()];
    else if (Date.now() - since > STALL_MS) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const unacked = await rss();
  await publishing.deleteQueue(queue);
  const deleted = await rss();
  await publisher.close();
  await consumer.close();
  return { before, unacked, deleted, delivered };
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function rows(name: string, f: Figures): BenchResult[] {
  return [
    {
      name: `memory per unacked message on ${name}: rss delta`,
      opsPerSec: (f.unacked - f.before) / f.delivered,
      unit: 'bytes',
      note: `${MESSAGES} persistent 100-byte messages, prefetch 0, ${f.delivered} delivered unacked; rss ${mib(f.before)} → ${mib(f.unacked)}`,
    },
    {
      name: `memory still held after deleting the queue on ${name}: rss over before`,
      opsPerSec: f.deleted - f.before,
      unit: 'bytes',
      note: `rss ${mib(f.deleted)}`,
    },
    // A server that stopped delivering short of the queue keeps the rest queued.
    ...(f.delivered < MESSAGES
      ? [
          {
            name: `memory per queued message on ${name}: rss delta over all`,
            opsPerSec: (f.unacked - f.before) / MESSAGES,
            unit: 'bytes' as const,
            note: `the ${MESSAGES - f.delivered} not delivered stay queued`,
          },
        ]
      : []),
  ];
}

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const server = await spawnServer('fs');
  try {
    const usage = async () => (await server.usage()).rss;
    results.push(...rows('mqlite (fs)', await scenario(server.url, usage)));
  } finally {
    await server.stop();
  }
  const pidFile = `${process.env.TMPDIR ?? '/tmp'}/lavinmq-${LAVINMQ_PORT}/pid`;
  const lavinPid = await readFile(pidFile, 'utf8').then(
    (s) => s.trim(),
    () => undefined,
  );
  if (lavinPid === undefined) {
    console.log(`LavinMQ left out: no ${pidFile} (start it with its script on ${LAVINMQ_PORT})`);
    return results;
  }
  const lavin = await scenario(`amqp://guest:guest@127.0.0.1:${LAVINMQ_PORT}`, () =>
    rssOf(lavinPid),
  );
  results.push(...rows('LavinMQ', lavin));
  return results;
}

if (isMain(import.meta.url)) printResults(await run());
