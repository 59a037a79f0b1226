import amqplib from 'amqplib';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type AmqpServer, listen } from '../../src/server/server.js';

let broker: Broker;
let server: AmqpServer;
let connection: amqplib.ChannelModel;

beforeAll(async () => {
  broker = await Broker.open();
  server = await listen(broker);
  connection = await amqplib.connect(server.url);
  connection.on('error', () => {});
  const ch = await connection.createConfirmChannel();
  await ch.assertQueue('events', { durable: true, arguments: { 'x-queue-type': 'stream' } });
  for (let i = 1; i <= 5; i++) ch.sendToQueue('events', Buffer.from(`e${i}`));
  await ch.waitForConfirms();
  await ch.close();
});
afterAll(async () => {
  await server.close();
  await broker.close();
});

test('x-stream-offset as a consumer argument; every delivery carries its offset', async () => {
  const ch = await connection.createChannel();
  await ch.prefetch(10);
  const got: string[] = [];
  const done = new Promise<void>((resolve) => {
    void ch.consume(
      'events',
      (m) => {
        got.push(`${m!.content} @${m!.properties.headers?.['x-stream-offset']}`);
        ch.ack(m!);
        if (got.length === 2) resolve();
      },
      { arguments: { 'x-stream-offset': 4 } },
    );
  });
  await done;
  expect(got).toEqual(['e4 @4', 'e5 @5']);
  await ch.close();
});

test('a stream consumer without a prefetch is refused with 406', async () => {
  const ch = await connection.createChannel();
  const error = new Promise<Error>((resolve) => ch.once('error', resolve));
  await expect(
    ch.consume('events', () => {}, { arguments: { 'x-stream-offset': 'first' } }),
  ).rejects.toThrow(/406/);
  expect((await error).message).toMatch(/PRECONDITION_FAILED - stream consumers need a prefetch/);
});
