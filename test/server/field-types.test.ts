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
import { Reader } from '../../src/server/wire/bytes.js';
import {
  readTypedTable,
  type TypedTable,
  type TypedValue,
} from '../../src/server/wire/field-table.js';
import { FRAME_HEADER } from '../../src/server/wire/methods.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { RawClient } from './raw-client.js';
import { onlyMqlite, rabbitUrl, servedBroker } from './served.js';

const rabbitPort = Number(new URL(rabbitUrl).port || 5672);

/** Every type, as amqplib's `{ '!': type, value }` notation publishes it. */
const published = {
  long: { '!': 'long', value: 7 },
  wideLong: { '!': 'long', value: 2 ** 40 },
  byte: { '!': 'byte', value: -5 },
  unsignedByte: { '!': 'unsignedbyte', value: 200 },
  short: { '!': 'short', value: -300 },
  unsignedShort: { '!': 'unsignedshort', value: 60000 },
  int: { '!': 'int', value: 100000 },
  unsignedInt: { '!': 'unsignedint', value: 4000000000 },
  float: { '!': 'float', value: 1.5 },
  double: { '!': 'double', value: 3 },
  fraction: { '!': 'double', value: 0.25 },
  decimal: { '!': 'decimal', value: { places: 2, digits: 12345 } },
  timestamp: { '!': 'timestamp', value: 1700000000 },
  bytes: Buffer.from([0, 1, 255]),
  void: null,
  flag: true,
  text: 'ünïcode',
  nested: { inner: { '!': 'short', value: 9 }, deeper: { last: { '!': 'byte', value: 1 } } },
  list: [
    { '!': 'byte', value: 1 },
    { '!': 'long', value: 2 },
    'three',
    [{ '!': 'short', value: 4 }],
  ],
};

/** The same table as the types and values a reader finds on the wire, in key order. */
const expected = sortedByKey([
  ['bytes', 'x:0001ff'],
  ['byte', 'b:-5'],
  ['decimal', 'D:2/12345'],
  ['double', 'd:3'],
  ['flag', 't:true'],
  ['float', 'f:1.5'],
  ['fraction', 'd:0.25'],
  ['int', 'I:100000'],
  ['list', ['A', ['b:1', 'l:2', 'S:three', ['A', ['s:4']]]]],
  ['long', 'l:7'],
  [
    'nested',
    [
      'F',
      [
        ['deeper', ['F', [['last', 'b:1']]]],
        ['inner', 's:9'],
      ],
    ],
  ],
  ['short', 's:-300'],
  ['text', 'S:ünïcode'],
  ['timestamp', 'T:1700000000'],
  ['unsignedByte', 'B:200'],
  ['unsignedInt', 'i:4000000000'],
  ['unsignedShort', 'u:60000'],
  ['void', 'V:null'],
  ['wideLong', `l:${2 ** 40}`],
]);

/** A typed value as a comparable string (or nested list), tag first. */
function show(v: TypedValue): unknown {
  switch (v.type) {
    case 'F':
      return ['F', showTable(v.value)];
    case 'A':
      return ['A', v.value.map(show)];
    case 'x':
      return `x:${Buffer.from(v.value).toString('hex')}`;
    case 'D':
      return `D:${v.value.scale}/${v.value.unscaled}`;
    default:
      return `${v.type}:${String(v.value)}`;
  }
}

function showTable(table: TypedTable): unknown[] {
  return sortedByKey(table.map(([k, v]) => [k, show(v)]));
}

function sortedByKey<T extends readonly [string, unknown]>(entries: T[]): T[] {
  return [...entries].sort(([a], [b]) => (a < b ? -1 : 1));
}

/** Publishes the typed headers to a new queue with amqplib, durable when asked. */
async function publishTyped(url: string, queue: string, durable: boolean): Promise<void> {
  const connection = await amqplib.connect(url);
  const ch = await connection.createConfirmChannel();
  await ch.assertQueue(queue, { durable });
  ch.sendToQueue(queue, Buffer.from('typed'), {
    headers: published,
    persistent: durable,
  } as amqplib.Options.Publish);
  await ch.waitForConfirms();
  await connection.close();
}

/** Gets one message from `queue` over raw frames and returns its headers with their tags. */
async function receiveTyped(port: number, queue: string): Promise<unknown[]> {
  return showTable(await receiveTable(port, queue));
}

async function receiveTable(port: number, queue: string): Promise<TypedTable> {
  const client = await RawClient.open(port);
  try {
    await client.openChannel(1);
    client.sendMethod(1, 'basic.get', { reserved1: 0, queue, noAck: true });
    await client.method('basic.get-ok', 1);
    const header = await client.frame(
      (f) => f.type === FRAME_HEADER && f.channel === 1,
      'content header',
    );
    const r = new Reader(header.payload);
    r.u16(); // class
    r.u16(); // weight
    r.u64(); // body size
    const flags = r.u16();
    // Only `headers` (flag bit 13) is set by the publisher; `deliveryMode` (bit 12) follows it.
    expect(flags & ~(1 << 12)).toBe(1 << 13);
    return readTypedTable(r);
  } finally {
    client.destroy();
  }
}

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
    expect(await receiveTyped(served.server.port, queue)).toEqual(expected);
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
        expect(await receiveTyped(diskServer.port, queue)).toEqual(expected);
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
      expect(await receiveTyped(rabbitPort, queue)).toEqual(expected);
    } finally {
      const connection = await amqplib.connect(`amqp://guest:guest@127.0.0.1:${rabbitPort}`);
      const ch = await connection.createChannel();
      await ch.deleteQueue(queue);
      await connection.close();
    }
  });
});
