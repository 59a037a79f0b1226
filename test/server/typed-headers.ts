/**
 * Typed headers as the tests see them: the table amqplib publishes with every AMQP type, and a
 * raw-frame reader that returns a delivered message's headers with their tags.
 */
import amqplib from 'amqplib';
import { expect } from 'vitest';
import { Reader } from '../../src/server/wire/bytes.js';
import {
  readTypedTable,
  type TypedTable,
  type TypedValue,
} from '../../src/server/wire/field-table.js';
import { FRAME_HEADER } from '../../src/server/wire/methods.js';
import { RawClient } from './raw-client.js';

/** Every type, as amqplib's `{ '!': type, value }` notation publishes it. */
export const published = {
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

/** {@link published} as the types and values a reader finds on the wire, in key order. */
export const publishedTags = sortedByKey([
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
export function show(v: TypedValue): unknown {
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

export function showTable(table: TypedTable): unknown[] {
  return sortedByKey(table.map(([k, v]) => [k, show(v)]));
}

export function sortedByKey<T extends readonly [string, unknown]>(entries: T[]): T[] {
  return [...entries].sort(([a], [b]) => (a < b ? -1 : 1));
}

/** Publishes `headers` (by default {@link published}) to a new queue with amqplib, durable when asked. */
export async function publishTyped(
  url: string,
  queue: string,
  durable: boolean,
  headers: object = published,
): Promise<void> {
  const connection = await amqplib.connect(url);
  const ch = await connection.createConfirmChannel();
  await ch.assertQueue(queue, { durable });
  ch.sendToQueue(queue, Buffer.from('typed'), {
    headers,
    persistent: durable,
  } as amqplib.Options.Publish);
  await ch.waitForConfirms();
  await connection.close();
}

/** Gets one message from `queue` over raw frames and returns its headers with their tags. */
export async function receiveTyped(port: number, queue: string): Promise<unknown[]> {
  return showTable(await receiveTable(port, queue));
}

export async function receiveTable(port: number, queue: string): Promise<TypedTable> {
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
