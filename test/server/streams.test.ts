import amqplib from 'amqplib';
import { beforeAll, expect, test } from 'vitest';
import { servedBroker } from './served.js';

const served = servedBroker();
let connection: amqplib.ChannelModel;

beforeAll(async () => {
  connection = await amqplib.connect(served.server.url);
  connection.on('error', () => {});
  const ch = await connection.createConfirmChannel();
  await ch.assertQueue('events', { durable: true, arguments: { 'x-queue-type': 'stream' } });
  for (let i = 1; i <= 5; i++) ch.sendToQueue('events', Buffer.from(`e${i}`));
  await ch.waitForConfirms();
  await ch.close();
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
