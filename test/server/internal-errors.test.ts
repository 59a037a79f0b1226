/**
 * Whatever the broker throws, the server writes only whole frames: an error inside the broker
 * during a method, or a frame that cannot be encoded, closes the connection with 541
 * INTERNAL_ERROR (as RabbitMQ does for an internal error), and every byte the server wrote
 * parses. Nothing is lost: what the connection held goes back to its queue.
 */
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type Outcome, REQUEUE } from '../../src/queues/consumer.js';
import type { Queue } from '../../src/queues/priority-queue.js';
import { listen } from '../../src/server/server.js';
import { RawClient, wellFormed } from './raw-client.js';

/** What RangeError a runaway recursion in the broker raises. */
const overflow = () => new RangeError('Maximum call stack size exceeded');

/** A served broker with a queue `jobs`, for one test. */
async function served(): Promise<
  { broker: Broker; jobs: Queue; client: RawClient } & AsyncDisposable
> {
  const broker = await Broker.open();
  const server = await listen(broker);
  const jobs = (await broker.queue('jobs', { durable: false })) as Queue;
  const client = await RawClient.open(server.port);
  await client.openChannel(1);
  return {
    broker,
    jobs,
    client,
    async [Symbol.asyncDispose]() {
      client.destroy();
      await server.close();
      await broker.close();
    },
  };
}

/**
 * Waits for the connection to close with 541 (caused by `classId.methodId`), answers it, and
 * checks every byte the server wrote; returns the frames' names.
 */
async function expectInternalError(client: RawClient, classId: number, methodId: number) {
  const close = await client.method('connection.close', 0);
  expect(close.args).toMatchObject({ replyCode: 541, classId, methodId });
  expect((close.args as { replyText: string }).replyText).toMatch(/^INTERNAL_ERROR - /);
  client.sendMethod(0, 'connection.close-ok', {});
  await client.waitClosed();
  const names = wellFormed(Buffer.concat(client.received));
  expect(names.at(-1)).toBe('connection.close');
  return names;
}

function consume(client: RawClient, noAck = false): void {
  client.sendMethod(1, 'basic.consume', {
    reserved1: 0,
    queue: 'jobs',
    consumerTag: 'c',
    noLocal: false,
    noAck,
    exclusive: false,
    nowait: false,
    arguments: {},
  });
}

/** Polls until `read` holds, with a generous deadline. */
async function until(read: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 15_000;
  while (!read()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A header value the broker stores but AMQP cannot carry (wider than 64 bits). */
const UNENCODABLE = { headers: { big: 2n ** 70n } };

describe('an error inside the broker', () => {
  test.each([
    [
      'throws',
      () => {
        throw overflow();
      },
    ],
    ['rejects', () => Promise.reject(overflow())],
  ])(
    'a publish the broker %s with a RangeError closes the connection with 541',
    async (_, fail) => {
      await using s = await served();
      // A confirmed publish goes through publishRouted, which confirms once routed.
      const publish = s.broker.publishRouted.bind(s.broker);
      s.broker.publishRouted = ((exchange, body, options, routed) =>
        options?.routingKey === 'jobs'
          ? fail()
          : publish(exchange, body, options, routed)) as typeof publish;
      s.client.sendMethod(1, 'confirm.select', { nowait: false });
      await s.client.method('confirm.select-ok', 1);
      s.client.publish(1, '', 'jobs', 'boom');
      await expectInternalError(s.client, 60, 40);
    },
  );

  test('a consume the broker fails with a RangeError closes the connection with 541', async () => {
    await using s = await served();
    s.jobs.subscribe = (() => Promise.reject(overflow())) as typeof s.jobs.subscribe;
    consume(s.client);
    await expectInternalError(s.client, 60, 20);
  });

  test('a requeue the broker fails with a RangeError closes the connection with 541', async () => {
    await using s = await served();
    await s.jobs.publish('one');
    const subscribe = s.jobs.subscribe.bind(s.jobs);
    s.jobs.subscribe = (async (...args: Parameters<typeof subscribe>) => {
      const subscription = await subscribe(...args);
      const settle = subscription.settle.bind(subscription);
      subscription.settle = (tag: number, multiple: boolean, outcome: Outcome) => {
        if (outcome === REQUEUE) throw overflow();
        settle(tag, multiple, outcome);
      };
      return subscription;
    }) as typeof subscribe;
    consume(s.client);
    await s.client.method('basic.deliver', 1);
    s.client.sendMethod(1, 'basic.nack', { deliveryTag: 1, multiple: false, requeue: true });
    await expectInternalError(s.client, 60, 120);
  });
});

describe('a frame that cannot be encoded', () => {
  test('a delivery is written whole or not at all; the connection closes with 541 and its messages go back', async () => {
    await using s = await served();
    await s.jobs.publish('good');
    await s.jobs.publish('bad', UNENCODABLE);
    await s.jobs.publish('after');
    consume(s.client);
    const names = await expectInternalError(s.client, 0, 0);
    // The good delivery went out whole, the bad one not at all, nothing after the close.
    expect(names.slice(-5)).toEqual([
      'basic.consume-ok',
      'basic.deliver',
      'header',
      'body',
      'connection.close',
    ]);
    await until(() => s.jobs.messageCount === 3, 'the deliveries back in the queue');
    const bodies: string[] = [];
    for (let got = await s.jobs.get(); got; got = await s.jobs.get())
      bodies.push(Buffer.from(got.body).toString());
    expect(bodies).toEqual(['good', 'bad', 'after']);
  });

  test('a basic.get-ok is written whole or not at all; the connection closes with 541', async () => {
    await using s = await served();
    await s.jobs.publish('bad', UNENCODABLE);
    s.client.sendMethod(1, 'basic.get', { reserved1: 0, queue: 'jobs', noAck: false });
    const names = await expectInternalError(s.client, 0, 0);
    expect(names).not.toContain('basic.get-ok');
    await until(() => s.jobs.messageCount === 1, 'the message back in the queue');
  });
});
