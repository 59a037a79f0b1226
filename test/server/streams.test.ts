import amqplib from 'amqplib';
import { beforeAll, expect, test } from 'vitest';
import { Reader } from '../../src/server/wire/bytes.js';
import { readTypedTable } from '../../src/server/wire/field-table.js';
import { FRAME_HEADER } from '../../src/server/wire/methods.js';
import { RawClient } from './raw-client.js';
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

test('every delivery carries its offset as a long (type l), as RabbitMQ and LavinMQ write it', async () => {
  const client = await RawClient.open(served.server.port);
  try {
    await client.openChannel(1);
    client.sendMethod(1, 'basic.qos', { prefetchSize: 0, prefetchCount: 10, global: false });
    await client.method('basic.qos-ok', 1);
    client.sendMethod(1, 'basic.consume', {
      reserved1: 0,
      queue: 'events',
      consumerTag: 'typed',
      noLocal: false,
      noAck: false,
      exclusive: false,
      nowait: false,
      arguments: { 'x-stream-offset': 'first' },
    });
    await client.method('basic.consume-ok', 1);
    const offsets: string[] = [];
    for (let i = 0; i < 5; i++) {
      const header = await client.frame((f) => f.type === FRAME_HEADER, 'a content header');
      const r = new Reader(header.payload);
      r.u16(); // class
      r.u16(); // weight
      r.u64(); // body size
      expect(r.u16()).toBe(1 << 13); // headers only
      const [, offset] = readTypedTable(r).find(([key]) => key === 'x-stream-offset')!;
      offsets.push(`${offset.type}:${String(offset.value)}`);
    }
    expect(offsets).toEqual(['l:1', 'l:2', 'l:3', 'l:4', 'l:5']);
  } finally {
    client.destroy();
  }
});
