/**
 * mqlite against the local RabbitMQ (or the broker `AMQP_URL` names), in the same run, through the
 * same `AMQPSessionLike` code: the time of a typical small test (open, declare, publish 10,
 * consume 10, close), and publish / consume-with-ack throughput of a classic queue, 100-byte
 * bodies, publishes pipelined 1000 at a time (awaiting every confirm).
 *
 * Standalone: `npx tsx bench/broker-vs-rabbitmq.ts`. Needs the broker; fails if it is down.
 */
import {
  type AMQPQueueLike,
  AMQPSession,
  type AMQPSessionLike,
  type QueueOptions,
} from '@cloudamqp/amqp-client';
import { Broker } from '../src/broker/broker.js';
import { bestOf, isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const BODY = 'x'.repeat(100);
const WINDOW = 1000;

/** `AMQPSessionLike` whose queues can also be purged and deleted, as both targets' can. */
interface Session extends AMQPSessionLike {
  queue(
    name: string,
    options?: QueueOptions,
  ): Promise<AMQPQueueLike & { purge(): Promise<unknown>; delete(): Promise<unknown> }>;
}

interface Target {
  readonly name: string;
  open(): Promise<Session>;
  /** Scenarios per timing round, messages per throughput round, and rounds: ~3 s in all. */
  readonly scenarios: number;
  readonly messages: number;
  readonly rounds: number;
}

const targets: Target[] = [
  {
    name: 'mqlite',
    open: () => Broker.open(),
    scenarios: scaled(2000),
    messages: scaled(200_000),
    rounds: 3,
  },
  {
    name: 'rabbitmq',
    open: () => AMQPSession.connect(url, { logger: null, maxRetries: 1 }),
    scenarios: scaled(5),
    messages: scaled(5_000),
    rounds: 2,
  },
];

/** The typical small test: a fresh session, a queue, 10 messages through it, closed. */
async function smallTest(target: Target, name: string): Promise<void> {
  const session = await target.open();
  const q = await session.queue(name, { durable: false, autoDelete: false, exclusive: true });
  for (let i = 0; i < 10; i++) await q.publish(`m${i}`);
  let received = 0;
  await new Promise<void>((resolve, reject) => {
    q.subscribe({ prefetch: 10 }, () => {
      if (++received === 10) resolve();
    }).catch(reject);
  });
  await session.stop();
}

async function publishAll(session: Session, queue: string, n: number): Promise<void> {
  const q = await session.queue(queue, { durable: false });
  for (let sent = 0; sent < n; sent += WINDOW) {
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < WINDOW && sent + i < n; i++) batch.push(q.publish(BODY));
    await Promise.all(batch);
  }
}

async function consumeAll(session: Session, queue: string, n: number): Promise<void> {
  const q = await session.queue(queue, { durable: false });
  let received = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  // A small batch can all arrive before subscribe() resolves: cancel only once both happened,
  // or the consumer lives on and takes the next round's messages.
  const sub = await q.subscribe({ prefetch: WINDOW }, () => {
    if (++received === n) done();
  });
  await all;
  await sub.cancel();
}

export async function run(): Promise<BenchResult[]> {
  try {
    await (await targets[1]!.open()).stop();
  } catch (error) {
    throw new Error(
      `bench/broker-vs-rabbitmq needs a broker at ${url.replace(/:[^:@/]*@/, ':***@')} (set AMQP_URL, or start RabbitMQ with 'rabbitmq-server -detached'): ${(error as Error).message}`,
    );
  }
  const results: BenchResult[] = [];
  const smallTestName = (target: Target) =>
    `small test (open, declare, publish 10, consume 10, close) on ${target.name}`;
  for (const target of targets) {
    let k = 0;
    const rate = await bestOf(
      target.scenarios,
      async () => {
        for (let i = 0; i < target.scenarios; i++) await smallTest(target, `bench-small-${k++}`);
      },
      { rounds: target.rounds },
    );
    results.push({
      name: smallTestName(target),
      opsPerSec: rate,
      note: `${(1000 / rate).toFixed(3)} ms per test`,
      unit: 'time',
      ...(target === targets[0]
        ? { targets: [{ target: '≥ 100× less time', beside: smallTestName(targets[1]!) }] }
        : {}),
    });
  }

  for (const target of targets) {
    const session = await target.open();
    const queue = `bench-throughput-${process.pid}`;
    const n = target.messages;
    try {
      const publish = await bestOf(n, () => publishAll(session, queue, n), {
        rounds: target.rounds,
        setup: async () => (await session.queue(queue, { durable: false })).purge(),
      });
      const consume = await bestOf(n, () => consumeAll(session, queue, n), {
        rounds: target.rounds,
        setup: () => publishAll(session, queue, n),
      });
      results.push(
        { name: `classic queue publish on ${target.name}`, opsPerSec: publish, note: 'msg/s' },
        {
          name: `classic queue consume with ack on ${target.name}`,
          opsPerSec: consume,
          note: `msg/s, prefetch ${WINDOW}`,
        },
      );
    } finally {
      await (await session.queue(queue, { durable: false })).delete();
      await session.stop();
    }
  }
  return results;
}

if (isMain(import.meta.url)) printResults(await run());
