/**
 * A rabbitmq-client application (its own AMQP stack): `Connection`, `createConsumer` with the
 * queue, qos, exchanges and bindings it declares, `createPublisher` with confirms and
 * `createRPCClient` over direct reply-to, run against mqlite's server and the local RabbitMQ
 * with the same assertions. `PARITY_TARGETS=mqlite` leaves RabbitMQ out.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AsyncMessage, Connection, ConsumerStatus } from 'rabbitmq-client';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { servedBroker, wireTargets } from './served.js';

const targets = wireTargets(servedBroker());

/** Resolves once `count` items were pushed; rejects after a generous deadline. */
function gather<T>(count: number): { items: T[]; push: (item: T) => void; done: Promise<T[]> } {
  const items: T[] = [];
  let resolve!: (items: T[]) => void;
  let reject!: (error: Error) => void;
  const done = new Promise<T[]>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const timer = setTimeout(() => reject(new Error(`got ${items.length} of ${count}`)), 15_000);
  return {
    items,
    done,
    push(item) {
      items.push(item);
      if (items.length === count) {
        clearTimeout(timer);
        resolve(items);
      }
    },
  };
}

describe.each(targets)('rabbitmq-client against $name', (target) => {
  let rabbit: Connection;
  const queues: string[] = [];
  const exchanges: string[] = [];
  const unique = (label: string) => `mqlite-rmqc-${label}-${randomBytes(4).toString('hex')}`;
  const queueName = (label: string) => {
    const q = unique(label);
    queues.push(q);
    return q;
  };
  const exchangeName = (label: string) => {
    const e = unique(label);
    exchanges.push(e);
    return e;
  };

  beforeAll(async () => {
    rabbit = new Connection({ url: target.url(), retryLow: 50, retryHigh: 200 });
    await rabbit.onConnect(15_000, true);
  });
  afterAll(async () => {
    for (const queue of queues) await rabbit.queueDelete({ queue });
    for (const exchange of exchanges) await rabbit.exchangeDelete({ exchange });
    await rabbit.close();
  });

  test('a consumer declares its queue, qos, exchange and binding; a confirming publisher reaches it', async () => {
    const exchange = exchangeName('events');
    const queue = queueName('orders');
    const got = gather<AsyncMessage>(3);
    const consumer = rabbit.createConsumer(
      {
        queue,
        queueOptions: { durable: false, arguments: { 'x-max-priority': 5 } },
        qos: { prefetchCount: 2 },
        exchanges: [{ exchange, type: 'topic', durable: false }],
        queueBindings: [{ exchange, queue, routingKey: 'order.*' }],
      },
      (msg) => {
        got.push(msg);
      },
    );
    await new Promise<void>((resolve) => consumer.once('ready', () => resolve()));
    const publisher = rabbit.createPublisher({ confirm: true, maxAttempts: 1 });
    await publisher.send(
      { exchange, routingKey: 'order.created', priority: 3, headers: { 'x-tenant': 'acme' } },
      { id: 1 },
    );
    await publisher.send({ exchange, routingKey: 'order.paid' }, 'plain text');
    await publisher.send({ exchange, routingKey: 'invoice.sent' }, 'not bound');
    await publisher.send({ exchange, routingKey: 'order.shipped' }, Buffer.from([1, 2, 3]));
    const [first, second, third] = await got.done;
    expect(first!.routingKey).toBe('order.created');
    expect(first!.body).toEqual({ id: 1 });
    expect(first!.contentType).toBe('application/json');
    expect(first!.priority).toBe(3);
    // As RabbitMQ: no `x-delivery-count` on a classic queue's deliveries.
    expect(first!.headers).toEqual({ 'x-tenant': 'acme' });
    expect(second!.body).toBe('plain text');
    expect(third!.routingKey).toBe('order.shipped');
    expect(Buffer.from(third!.body as Buffer)).toEqual(Buffer.from([1, 2, 3]));
    await publisher.close();
    await consumer.close();
    const declared = await rabbit.queueDeclare({ queue, passive: true });
    expect(declared.messageCount).toBe(0);
  });

  test('a handler returning DROP dead-letters, REQUEUE redelivers, a throw requeues', async () => {
    const dlx = exchangeName('dlx');
    const dead = queueName('dead');
    const queue = queueName('work');
    await rabbit.exchangeDeclare({ exchange: dlx, type: 'fanout', durable: false });
    await rabbit.queueDeclare({ queue: dead, durable: false });
    await rabbit.queueBind({ exchange: dlx, queue: dead });
    const seen: string[] = [];
    const settled = gather<string>(4);
    const consumer = rabbit.createConsumer(
      {
        queue,
        queueOptions: { durable: false, arguments: { 'x-dead-letter-exchange': dlx } },
        qos: { prefetchCount: 1 },
      },
      (msg) => {
        const body = String(msg.body);
        seen.push(`${body}${msg.redelivered ? ' again' : ''}`);
        if (body === 'drop') {
          settled.push('drop');
          return ConsumerStatus.DROP;
        }
        if (body === 'requeue' && !msg.redelivered) return ConsumerStatus.REQUEUE;
        if (body === 'throw' && !msg.redelivered) throw new Error('handler failed');
        settled.push(body);
        return ConsumerStatus.ACK;
      },
    );
    consumer.on('error', () => {});
    await new Promise<void>((resolve) => consumer.once('ready', () => resolve()));
    const publisher = rabbit.createPublisher({ confirm: true });
    for (const body of ['drop', 'requeue', 'throw', 'ok']) {
      await publisher.send({ routingKey: queue }, body);
    }
    expect((await settled.done).sort()).toEqual(['drop', 'ok', 'requeue', 'throw']);
    expect(seen).toContain('requeue again');
    expect(seen).toContain('throw again');
    await publisher.close();
    await consumer.close();
    const deadLetter = await rabbit.basicGet({ queue: dead, noAck: true });
    if (!deadLetter) throw new Error('no dead letter');
    expect(String(deadLetter.body)).toBe('drop');
    const death = (deadLetter.headers!['x-death'] as Record<string, unknown>[])[0]!;
    expect(death.reason).toBe('rejected');
    expect(death.queue).toBe(queue);
  });

  test('an RPC client sends over direct reply-to and a consumer replies', async () => {
    const queue = queueName('rpc');
    const server = rabbit.createConsumer(
      { queue, queueOptions: { durable: false, exclusive: true } },
      async (request, reply) => {
        await reply(`pong ${String(request.body)}`, { headers: { served: true } });
      },
    );
    await new Promise<void>((resolve) => server.once('ready', () => resolve()));
    const client = rabbit.createRPCClient({ confirm: true, timeout: 15_000 });
    const replies = await Promise.all(['a', 'b', 'c'].map((n) => client.send(queue, n)));
    expect(replies.map((r) => r.body)).toEqual(['pong a', 'pong b', 'pong c']);
    expect(replies[0]!.headers).toEqual({ served: true });
    expect(replies[0]!.correlationId).toBeDefined();
    await client.close();
    await server.close();
  });

  test('a consumer whose queue is deleted is cancelled, declares it again and goes on', async () => {
    const queue = queueName('doomed');
    const errors = gather<{ code?: string }>(1);
    const got = gather<string>(1);
    const consumer = rabbit.createConsumer({ queue, queueOptions: { durable: false } }, (msg) =>
      got.push(String(msg.body)),
    );
    consumer.on('error', (error) => errors.push(error));
    await new Promise<void>((resolve) => consumer.once('ready', () => resolve()));
    const again = new Promise<void>((resolve) => consumer.once('ready', () => resolve()));
    await rabbit.queueDelete({ queue });
    const [error] = await errors.done;
    expect(error!.code).toBe('CANCEL_FORCED');
    await again;
    const publisher = rabbit.createPublisher({ confirm: true });
    await publisher.send({ routingKey: queue }, 'after');
    expect(await got.done).toEqual(['after']);
    await publisher.close();
    await consumer.close();
  });

  test('a mandatory message nothing routes comes back to the publisher, and is confirmed', async () => {
    const returned = gather<string>(1);
    const publisher = rabbit.createPublisher({ confirm: true });
    publisher.on(
      'basic.return',
      (msg: { replyCode: number; replyText: string; routingKey: string }) =>
        returned.push(`${msg.replyCode} ${msg.replyText} ${msg.routingKey}`),
    );
    const nowhere = unique('nowhere');
    await publisher.send({ routingKey: nowhere, mandatory: true }, 'lost');
    expect(await returned.done).toEqual([`312 NO_ROUTE ${nowhere}`]);
    await publisher.close();
  });
});

describe('rabbitmq-client over fs storage', () => {
  test('an RPC client with confirms loses no reply to its confirm coming late', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-rpc-'));
    const broker = await Broker.open({ storage: fsStorage({ dir }) });
    const server = await listen(broker);
    const rabbit = new Connection({ url: server.url, retryLow: 50, retryHigh: 200 });
    try {
      await rabbit.onConnect(15_000, true);
      const queue = `mqlite-rmqc-rpc-fs-${randomBytes(4).toString('hex')}`;
      const responder = rabbit.createConsumer(
        { queue, queueOptions: { durable: false, exclusive: true } },
        async (request, reply) => {
          await reply(`pong ${String(request.body)}`);
        },
      );
      await new Promise<void>((resolve) => responder.once('ready', () => resolve()));
      const client = rabbit.createRPCClient({ confirm: true, timeout: 2_000 });
      let replies = 0;
      for (let i = 0; i < 20; i++) {
        const reply = await client.send(queue, `${i}`).catch(() => undefined);
        if (reply && String(reply.body) === `pong ${i}`) replies++;
      }
      expect(replies).toBe(20);
      await client.close();
      await responder.close();
    } finally {
      await rabbit.close();
      await server.close();
      await broker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
