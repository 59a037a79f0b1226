/**
 * Shovel throughput: messages a second a shovel moves from a queue of an in-process broker to a
 * queue of RabbitMQ, and to a queue of a mqlite broker served over loopback (`listen()` in this
 * process), each beside a plain amqplib publisher with confirms into the same destination, in the
 * same run. The shovel runs `on-confirm` with the default prefetch (1000); the publisher waits for
 * the confirms of each window of 1000. The mqlite destination shares this process's thread with
 * the shovel and the publisher alike.
 *
 * Standalone: `npx tsx bench/shovel.ts` (RabbitMQ at `AMQP_URL`, by default 127.0.0.1:5672).
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { Broker } from '../src/broker/broker.js';
import { listen } from '../src/server/server.js';
import { bestInTurns, isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const MESSAGES = scaled(20_000);
const BODY = Buffer.alloc(256, 7);
const WINDOW = 1000;
const prefix = `bench-shovel-${randomBytes(3).toString('hex')}`;

async function waitFor(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('bench/shovel: timed out');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Moves MESSAGES from a local queue to `queue` at `destination`; resolves with messages/s. */
async function shovelRate(destination: string, queue: string): Promise<number> {
  await using broker = await Broker.open();
  const source = await broker.queue('outbox');
  for (let i = 0; i < MESSAGES; i++) void source.publish(BODY);
  await waitFor(async () => source.messageCount === MESSAGES);
  const start = performance.now();
  await broker.setShovel('bench', {
    'src-uri': 'amqp://',
    'src-queue': 'outbox',
    'dest-uri': destination,
    'dest-queue': queue,
  });
  await waitFor(async () => (await broker.shovels())[0]?.forwarded === MESSAGES);
  return (MESSAGES / (performance.now() - start)) * 1000;
}

/** Publishes MESSAGES to `queue` at `destination` with amqplib and confirms; messages/s. */
async function amqplibRate(destination: string, queue: string): Promise<number> {
  const connection = await amqplib.connect(destination);
  try {
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true });
    const start = performance.now();
    for (let i = 0; i < MESSAGES; i++) {
      channel.sendToQueue(queue, BODY);
      if ((i + 1) % WINDOW === 0) await channel.waitForConfirms();
    }
    await channel.waitForConfirms();
    return (MESSAGES / (performance.now() - start)) * 1000;
  } finally {
    await connection.close();
  }
}

/** Empties the destination queue between rounds. */
async function purge(destination: string, queue: string): Promise<void> {
  const connection = await amqplib.connect(destination);
  const channel = await connection.createChannel();
  await channel.assertQueue(queue, { durable: true });
  await channel.purgeQueue(queue);
  await connection.close();
}

export async function run(): Promise<BenchResult[]> {
  const central = await Broker.open();
  const server = await listen(central, { port: 0 });
  const mqliteUrl = `amqp://guest:guest@127.0.0.1:${server.port}`;
  const rabbitQueue = `${prefix}-dest`;
  const measure = (destination: string, rate: typeof shovelRate) => async () => {
    await purge(destination, rabbitQueue);
    return rate(destination, rabbitQueue);
  };
  try {
    const [toRabbit, plainRabbit, toMqlite, plainMqlite] = await bestInTurns(
      MESSAGES < 100 ? 1 : 3,
      [
        measure(url, shovelRate),
        measure(url, amqplibRate),
        measure(mqliteUrl, shovelRate),
        measure(mqliteUrl, amqplibRate),
      ],
    );
    const note = `${MESSAGES} messages of 256 B, on-confirm, prefetch 1000`;
    return [
      { name: 'shovel local → RabbitMQ', opsPerSec: toRabbit!, note },
      {
        name: 'amqplib publisher → RabbitMQ',
        opsPerSec: plainRabbit!,
        note: 'confirms, window 1000',
      },
      { name: 'shovel local → mqlite (loopback)', opsPerSec: toMqlite!, note },
      {
        name: 'amqplib publisher → mqlite (loopback)',
        opsPerSec: plainMqlite!,
        note: 'confirms, window 1000',
      },
    ];
  } finally {
    const connection = await amqplib.connect(url);
    const channel = await connection.createChannel();
    await channel.deleteQueue(rabbitQueue);
    await connection.close();
    await server.close();
    await central.close();
  }
}

if (isMain(import.meta.url)) printResults(await run());
