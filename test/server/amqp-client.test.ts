/**
 * An `@cloudamqp/amqp-client` application as written for production (a pricing service: an RPC
 * server, its callers, and a worker consuming with manual acks), run unchanged against mqlite's
 * server and the local RabbitMQ. `PARITY_TARGETS=mqlite` leaves RabbitMQ out.
 */
import { randomBytes } from 'node:crypto';
import { AMQPSession } from '@cloudamqp/amqp-client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { servedBroker, wireTargets } from './served.js';

// --- the application ---------------------------------------------------------------------------

/** Serves quotes on `queue`: the price of `{ sku, qty }`. */
async function startPricing(session: AMQPSession, queue: string) {
  await session.queue(queue, { durable: false, autoDelete: true });
  return session.rpcServer(queue, (msg) => {
    const { sku, qty } = JSON.parse(msg.bodyString() ?? '{}') as { sku: string; qty: number };
    return JSON.stringify({ sku, total: qty * (sku === 'apple' ? 3 : 5) });
  });
}

/** Asks the pricing service for a quote. */
async function quote(session: AMQPSession, queue: string, sku: string, qty: number) {
  const reply = await session.rpcCall(queue, JSON.stringify({ sku, qty }), { timeout: 15_000 });
  return JSON.parse(reply.bodyString() ?? '{}') as { sku: string; total: number };
}

// --- the tests ---------------------------------------------------------------------------------

const targets = wireTargets(servedBroker());

describe.each(targets)('an amqp-client application against $name', (target) => {
  let session: AMQPSession;
  const unique = (label: string) => `mqlite-amqpc-${label}-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    session = await AMQPSession.connect(target.url(), { logger: null });
  });
  afterAll(async () => {
    await session.stop();
  });

  test('RPC over direct reply-to: one-off calls and a reusable client', async () => {
    const queue = unique('pricing');
    const pricing = await startPricing(session, queue);
    expect(await quote(session, queue, 'apple', 4)).toEqual({ sku: 'apple', total: 12 });
    const client = await session.rpcClient();
    const replies = await Promise.all(
      [1, 2, 3].map((qty) => client.call(queue, JSON.stringify({ sku: 'pear', qty }))),
    );
    expect(replies.map((r) => JSON.parse(r.bodyString() ?? '')).map((q) => q.total)).toEqual([
      5, 10, 15,
    ]);
    expect(replies.every((r) => r.properties.correlationId !== undefined)).toBe(true);
    await client.close();
    await pricing.close();
  });

  test('a worker with prefetch and manual acks gets each job once, a nacked one again', async () => {
    const q = await session.queue(unique('jobs'), { durable: false });
    const seen: string[] = [];
    let resolve!: () => void;
    const done = new Promise<void>((res) => {
      resolve = res;
    });
    const subscription = await q.subscribe({ prefetch: 2, manualAck: true }, async (msg) => {
      const body = msg.bodyString() ?? '';
      seen.push(`${body}${msg.redelivered ? '*' : ''}`);
      if (body === 'flaky' && !msg.redelivered) await msg.nack(true);
      else await msg.ack();
      if (seen.length === 4) resolve();
    });
    for (const job of ['a', 'flaky', 'b']) await q.publish(job);
    await done;
    expect(seen.filter((s) => s !== 'flaky').sort()).toEqual(['a', 'b', 'flaky*']);
    await subscription.cancel();
    await q.delete();
  });
});
