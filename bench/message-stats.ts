/**
 * The cost of the message counters behind the management API's `message_stats` and the
 * Prometheus counters: publish and consume over AMQP (amqplib, in this process) to a served
 * broker with the counters on (the default) beside one with them off (`messageStats: false`),
 * taking turns so both see the same load. The ratio is the hot path's cost (goal: within 3%).
 *
 * Standalone: `npx tsx bench/message-stats.ts`. For paired runs, one process a side:
 * `npx tsx bench/message-stats.ts --side on` (or `off`) publishes then consumes `MESSAGES` on
 * one server and prints its two rates as one JSON line; run the two sides in turn, A B A B, and
 * compare them pair by pair.
 */
import amqplib from 'amqplib';
import { Broker } from '../src/broker/broker.js';
import { listen } from '../src/server/server.js';
import { bestInTurns, isMain, printResults, SMOKE, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const MESSAGES = scaled(50_000);
const ROUNDS = SMOKE ? 1 : 7;
const BODY = Buffer.alloc(64, 'x');

interface Served {
  readonly broker: Broker;
  readonly channel: amqplib.ConfirmChannel;
  close(): Promise<void>;
}

async function serve(messageStats: boolean): Promise<Served> {
  const broker = await Broker.open();
  const server = await listen(broker, { messageStats });
  const connection = await amqplib.connect(server.url);
  const channel = await connection.createConfirmChannel();
  return {
    broker,
    channel,
    async close() {
      await connection.close();
      await server.close();
      await broker.close();
    },
  };
}

/** Publishes `MESSAGES` with confirms, in windows of 1000; messages a second. */
async function publish({ broker, channel }: Served, round: number): Promise<number> {
  const queue = `p${round}`;
  await channel.assertQueue(queue, { durable: false });
  const start = performance.now();
  for (let i = 0; i < MESSAGES; i++) {
    channel.sendToQueue(queue, BODY);
    if (i % 1000 === 999) await channel.waitForConfirms();
  }
  await channel.waitForConfirms();
  const rate = (MESSAGES / (performance.now() - start)) * 1000;
  await broker.deleteQueue(queue);
  return rate;
}

/** Consumes `MESSAGES` stored beforehand, acking each, prefetch 500; messages a second. */
async function consume({ broker, channel }: Served, round: number): Promise<number> {
  const queue = `c${round}`;
  await channel.assertQueue(queue, { durable: false });
  for (let i = 0; i < MESSAGES; i++) await broker.publish('', BODY, { routingKey: queue });
  await channel.prefetch(500);
  let seen = 0;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    void channel.consume(queue, (message) => {
      if (!message) return;
      channel.ack(message);
      if (++seen === MESSAGES) resolve();
    });
  });
  const rate = (MESSAGES / (performance.now() - start)) * 1000;
  await broker.deleteQueue(queue);
  return rate;
}

export async function run(): Promise<BenchResult[]> {
  const on = await serve(true);
  const off = await serve(false);
  try {
    const [publishOn, publishOff, consumeOn, consumeOff] = await bestInTurns(ROUNDS, [
      (round) => publish(on, round),
      (round) => publish(off, round),
      (round) => consume(on, round),
      (round) => consume(off, round),
    ]);
    const note = (a: number, b: number) => `${((a / b) * 100).toFixed(1)}% of counters off`;
    return [
      {
        name: 'message stats: publish, counters on',
        opsPerSec: publishOn!,
        note: note(publishOn!, publishOff!),
      },
      { name: 'message stats: publish, counters off', opsPerSec: publishOff! },
      {
        name: 'message stats: consume, counters on',
        opsPerSec: consumeOn!,
        note: note(consumeOn!, consumeOff!),
      },
      { name: 'message stats: consume, counters off', opsPerSec: consumeOff! },
    ];
  } finally {
    await on.close();
    await off.close();
  }
}

/**
 * One side alone, in a process of its own: its publish and consume rates, and the CPU time of
 * each (client and server, both in this process) in microseconds a message, which a loaded
 * machine disturbs less than the rates.
 */
async function side(messageStats: boolean): Promise<Record<string, number>> {
  const served = await serve(messageStats);
  const cpu = async (work: () => Promise<number>) => {
    const start = process.cpuUsage();
    const rate = await work();
    const used = process.cpuUsage(start);
    return [rate, (used.user + used.system) / MESSAGES] as const;
  };
  try {
    const [publishRate, publishCpu] = await cpu(() => publish(served, 0));
    const [consumeRate, consumeCpu] = await cpu(() => consume(served, 0));
    return { publish: publishRate, consume: consumeRate, publishCpu, consumeCpu };
  } finally {
    await served.close();
  }
}

if (isMain(import.meta.url)) {
  const at = process.argv.indexOf('--side');
  if (at < 0) printResults(await run());
  else {
    const which = process.argv[at + 1];
    if (which !== 'on' && which !== 'off') throw new Error('--side takes on or off');
    console.log(JSON.stringify({ side: which, ...(await side(which === 'on')) }));
  }
}
