/**
 * Shovels side by side with RabbitMQ's shovel plugin: the same definition moving messages between
 * two RabbitMQ queues (RabbitMQ's shovel) and from a mqlite queue to a RabbitMQ queue (mqlite's)
 * gives the same messages, the same `x-shovelled` and `x-shovelled-timestamp` headers and the same
 * `src-delete-after` behaviour. RabbitMQ needs `rabbitmq_shovel` and `rabbitmq_shovel_management`.
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { poll } from '../shovels/poll.js';
import { amqpUrl } from './targets.js';

const api = (() => {
  const url = new URL(amqpUrl);
  return `http://${url.hostname}:15672/api`;
})();
const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
const prefix = `shovel-${randomBytes(4).toString('hex')}`;

async function http(method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization: auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok && response.status !== 404) {
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  }
  return response.status === 204 || response.status === 201 ? undefined : response.json();
}

let connection: amqplib.ChannelModel;
let channel: amqplib.Channel;
beforeAll(async () => {
  connection = await amqplib.connect(amqpUrl);
  channel = await connection.createChannel();
});
afterAll(async () => {
  for (const suffix of ['r-src', 'r-dst', 'm-dst', 'r-in', 'r-full', 'm-full']) {
    await channel.deleteQueue(`${prefix}-${suffix}`).catch(() => {});
  }
  await connection.close();
});

/** Every message of a RabbitMQ queue, taken. */
async function drain(queue: string) {
  const out: amqplib.GetMessage[] = [];
  for (;;) {
    const message = await channel.get(queue, { noAck: true });
    if (message === false) return out;
    out.push(message);
  }
}

const definition = (src: string, dest: string) => ({
  'src-queue': src,
  'dest-queue': dest,
  'dest-add-forward-headers': true,
  'dest-add-timestamp-header': true,
  'src-delete-after': 'queue-length' as const,
});

/** What must agree: the bodies, and each header with the URIs and node names left aside. */
function comparable(messages: amqplib.GetMessage[]) {
  return messages.map((m) => {
    const headers = { ...m.properties.headers };
    const [hop, ...rest] = headers['x-shovelled'] as Record<string, unknown>[];
    const { 'src-uri': _s, 'dest-uri': _d, 'shovelled-by': _b, ...kept } = hop!;
    return {
      body: m.content.toString(),
      h: headers.h,
      hops: rest.length + 1,
      hop: { ...kept, 'src-queue': 'SRC', 'dest-queue': 'DST' },
      hopKeys: Object.keys(hop!).sort(),
      timestamp: typeof headers['x-shovelled-timestamp'],
    };
  });
}

describe('shovels against RabbitMQ', () => {
  test('the same definition moves the same messages with the same headers, then deletes itself', async () => {
    const rSrc = `${prefix}-r-src`;
    const rDst = `${prefix}-r-dst`;
    const mDst = `${prefix}-m-dst`;
    await channel.assertQueue(rSrc, { durable: true });
    for (let i = 0; i < 3; i++) {
      channel.sendToQueue(rSrc, Buffer.from(`m${i}`), { headers: { h: i } });
    }
    await poll(
      async () => (await channel.checkQueue(rSrc)).messageCount,
      (n) => n === 3,
      'the messages in RabbitMQ',
    );
    const rabbitName = `${prefix}-r`;
    await http('PUT', `/parameters/shovel/%2F/${rabbitName}`, {
      value: { 'src-uri': 'amqp://', 'dest-uri': 'amqp://', ...definition(rSrc, rDst) },
    });
    await poll(
      () => http('GET', `/parameters/shovel/%2F/${rabbitName}`),
      (v) => (v as { error?: string }).error !== undefined,
      'the RabbitMQ shovel to delete itself',
    );

    await using broker = await Broker.open();
    const input = await broker.queue('in');
    for (let i = 0; i < 3; i++) await input.publish(`m${i}`, { headers: { h: i } });
    await broker.setShovel('m', {
      'src-uri': 'amqp://',
      'dest-uri': amqpUrl,
      ...definition('in', mDst),
    });
    await poll(
      () => broker.shovels(),
      (s) => s.length === 0,
      'the mqlite shovel to delete itself',
    );

    const fromRabbit = comparable(await drain(rDst));
    const fromMqlite = comparable(await drain(mDst));
    expect(fromRabbit).toHaveLength(3);
    expect(fromMqlite).toEqual(
      fromRabbit.map((m) => ({ ...m, hop: { ...m.hop, 'shovel-name': 'm' } })),
    );
    expect(fromRabbit[0]?.hopKeys).toEqual([
      'dest-queue',
      'dest-uri',
      'shovel-name',
      'shovel-type',
      'shovel-vhost',
      'shovelled-by',
      'src-queue',
      'src-uri',
    ]);
    // After src-delete-after, both sources keep what comes later.
    channel.sendToQueue(rSrc, Buffer.from('later'));
    await input.publish('later');
    await poll(
      async () => (await channel.checkQueue(rSrc)).messageCount,
      (n) => n === 1,
      'the later message to stay in RabbitMQ',
    );
    expect(input.messageCount).toBe(1);
    expect(broker.exportDefinitions().parameters).toEqual([]);
  });

  test('a destination queue that refuses (reject-publish, full) leaves each message in the source until there is room, the shovel running', async () => {
    const full = { 'x-max-length': 1, 'x-overflow': 'reject-publish' };
    const rIn = `${prefix}-r-in`;
    const rFull = `${prefix}-r-full`;
    const mFull = `${prefix}-m-full`;
    await channel.assertQueue(rIn, { durable: true });
    for (const queue of [rFull, mFull]) {
      await channel.assertQueue(queue, { durable: true, arguments: full });
      channel.sendToQueue(queue, Buffer.from('already there'));
    }
    channel.sendToQueue(rIn, Buffer.from('a'));
    channel.sendToQueue(rIn, Buffer.from('b'));
    await using broker = await Broker.open();
    const input = await broker.queue('in');
    for (const body of ['a', 'b']) await input.publish(body);
    const rabbitName = `${prefix}-full`;
    const value = (src: string, dest: string) => ({
      'src-uri': 'amqp://',
      'src-queue': src,
      'dest-uri': src === 'in' ? amqpUrl : 'amqp://',
      'dest-queue': dest,
    });
    try {
      await http('PUT', `/parameters/shovel/%2F/${rabbitName}`, { value: value(rIn, rFull) });
      await broker.setShovel('m', value('in', mFull));
      const rabbitState = async () =>
        ((await http('GET', `/shovels/vhost/%2F/${rabbitName}`)) as { state?: string }[])[0]?.state;
      await poll(rabbitState, (state) => state === 'running', 'the RabbitMQ shovel running');
      await poll(
        () => broker.shovels(),
        (s) => s[0]?.state === 'running',
        'the mqlite shovel running',
      );
      /** Takes the destination's messages until three came, each once. */
      const take = async (queue: string) => {
        const got: string[] = [];
        await poll(
          async () => {
            for (const m of await drain(queue)) got.push(m.content.toString());
            return got.length;
          },
          (n) => n >= 3,
          `three messages from ${queue}`,
        );
        return got.sort();
      };
      const fromRabbit = await take(rFull);
      const fromMqlite = await take(mFull);
      expect(fromRabbit).toEqual(['a', 'already there', 'b']);
      expect(fromMqlite).toEqual(fromRabbit);
      expect(await rabbitState()).toBe('running');
      expect((await broker.shovels())[0]?.state).toBe('running');
      await poll(
        () => broker.shovels(),
        (s) => s[0]?.forwarded === 2,
        'two forwarded by mqlite',
      );
      expect(input.messageCount).toBe(0);
      expect((await channel.checkQueue(rIn)).messageCount).toBe(0);
    } finally {
      await http('DELETE', `/parameters/shovel/%2F/${rabbitName}`);
    }
  });
});
