/**
 * Header values keep their AMQP type through the broker: published by amqplib with explicit
 * types, read back as raw frames by another connection, against mqlite's server (memory and fs
 * storage, reopened) and the local RabbitMQ with the same expectations.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import amqplib from 'amqplib';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { onlyMqlite, rabbitUrl, servedBroker } from './served.js';
import { publishedTags, publishTyped, receiveTable, receiveTyped, show } from './typed-headers.js';

const rabbitPort = Number(new URL(rabbitUrl).port || 5672);

/**
 * Publishes a byte header to a queue that dead-letters to another, rejects it there, and reads
 * the dead letter's `byte` header and `x-death` count with their tags.
 */
async function deadLetterTypes(url: string, port: number): Promise<unknown[]> {
  const suffix = randomBytes(4).toString('hex');
  const [source, dead, dlx] = [
    `mqlite-src-${suffix}`,
    `mqlite-dead-${suffix}`,
    `mqlite-dlx-${suffix}`,
  ];
  const connection = await amqplib.connect(url);
  try {
    const ch = await connection.createConfirmChannel();
    await ch.assertExchange(dlx, 'fanout', { durable: false });
    await ch.assertQueue(dead, { durable: false });
    await ch.bindQueue(dead, dlx, '');
    await ch.assertQueue(source, { durable: false, deadLetterExchange: dlx });
    ch.sendToQueue(source, Buffer.from('x'), { headers: { byte: { '!': 'byte', value: -5 } } });
    await ch.waitForConfirms();
    const got = await ch.get(source);
    if (!got) throw new Error('the source queue was empty');
    ch.nack(got, false, false);
    const deadline = Date.now() + 15_000;
    while ((await ch.checkQueue(dead)).messageCount === 0) {
      if (Date.now() > deadline) throw new Error('no dead letter');
    }
    const typed = await receiveTable(port, dead);
    await ch.deleteQueue(source);
    await ch.deleteQueue(dead);
    await ch.deleteExchange(dlx);
    const byte = typed.find(([k]) => k === 'byte')!;
    const death = typed.find(([k]) => k === 'x-death')![1];
    if (death.type !== 'A' || death.value[0]?.type !== 'F') throw new Error('no x-death entry');
    const count = death.value[0].value.find(([k]) => k === 'count')!;
    return [show(byte[1]), show(count[1])];
  } finally {
    await connection.close();
  }
}

describe('header types through the broker', () => {
  const served = servedBroker();

  test('every type tag published arrives at another client unchanged', async () => {
    const queue = `mqlite-types-${randomBytes(4).toString('hex')}`;
    await publishTyped(served.server.url, queue, false);
    expect(await receiveTyped(served.server.port, queue)).toEqual(publishedTags);
  });

  test('in the process, the same headers are plain JavaScript values', async () => {
    const queue = `mqlite-types-${randomBytes(4).toString('hex')}`;
    await publishTyped(served.server.url, queue, false);
    const message = await (await served.broker.queue(queue, { durable: false })).get({
      noAck: true,
    });
    const headers = message!.properties.headers!;
    expect(headers).toEqual({
      long: 7,
      wideLong: 2 ** 40,
      byte: -5,
      unsignedByte: 200,
      short: -300,
      unsignedShort: 60000,
      int: 100000,
      unsignedInt: 4000000000,
      float: 1.5,
      double: 3,
      fraction: 0.25,
      decimal: 123.45,
      timestamp: new Date(1700000000 * 1000),
      bytes: new Uint8Array([0, 1, 255]),
      void: null,
      flag: true,
      text: 'ünïcode',
      nested: { inner: 9, deeper: { last: 1 } },
      list: [1, 2, 'three', [4]],
      'x-delivery-count': 0,
    });
    expect(Object.keys(headers)).toHaveLength(20);
    expect(JSON.stringify(headers.nested)).toBe('{"inner":9,"deeper":{"last":1}}');
  });

  test('a durable message keeps its types on disk, across a restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mqlite-types-'));
    try {
      const queue = 'typed';
      let disk = await Broker.open({ storage: fsStorage({ dir }) });
      let diskServer = await listen(disk);
      await publishTyped(diskServer.url, queue, true);
      await diskServer.close();
      await disk.close();
      disk = await Broker.open({ storage: fsStorage({ dir }) });
      diskServer = await listen(disk);
      try {
        expect(await receiveTyped(diskServer.port, queue)).toEqual(publishedTags);
      } finally {
        await diskServer.close();
        await disk.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a dead letter keeps the types of its headers, and x-death counts in a long', async () => {
    expect(await deadLetterTypes(served.server.url, served.server.port)).toEqual(['b:-5', 'l:1']);
  });

  test.skipIf(onlyMqlite)('RabbitMQ dead-letters them the same way', async () => {
    const url = `amqp://guest:guest@127.0.0.1:${rabbitPort}`;
    expect(await deadLetterTypes(url, rabbitPort)).toEqual(['b:-5', 'l:1']);
  });

  test.skipIf(onlyMqlite)('RabbitMQ relays them the same way', async () => {
    const queue = `mqlite-types-${randomBytes(4).toString('hex')}`;
    await publishTyped(`amqp://guest:guest@127.0.0.1:${rabbitPort}`, queue, false);
    try {
      expect(await receiveTyped(rabbitPort, queue)).toEqual(publishedTags);
    } finally {
      const connection = await amqplib.connect(`amqp://guest:guest@127.0.0.1:${rabbitPort}`);
      const ch = await connection.createChannel();
      await ch.deleteQueue(queue);
      await connection.close();
    }
  });
});
