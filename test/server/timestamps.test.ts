/**
 * AMQP timestamps are any 64-bit count of seconds: the `timestamp` property and `T` header values
 * come back bit for bit, whatever their range, published and read as raw frames through mqlite's
 * server (memory, and fs storage reopened) and the local RabbitMQ alike.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { AmqpTimestamp } from '../../src/message/timestamp.js';
import { listen } from '../../src/server/server.js';
import { FRAME_HEADER } from '../../src/server/wire/methods.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { RawClient, rawFrame } from './raw-client.js';
import { onlyMqlite, rabbitUrl } from './served.js';

/** Timestamps as the 64 bits a client sends (Go's suite draws any of them). */
const BITS = [
  0n, // 1970
  1_700_000_000n, // an ordinary date
  0xffff_ffff_ffff_ffffn, // -1 s, before 1970
  0x8000_0000_0000_0000n, // the most negative
  0x7fff_ffff_ffff_ffffn, // the most positive
  1n << 62n, // far beyond a Date
  8_640_000_000_001n, // one second beyond a Date
];

/** A content header with the `headers` table `{ at: T bits }` and the `timestamp` property. */
function contentHeader(bits: bigint, bodySize: number): Buffer {
  const table = Buffer.alloc(4 + 1 + 2 + 1 + 8);
  table.writeUInt32BE(table.length - 4, 0);
  table[4] = 2;
  table.write('at', 5, 'latin1');
  table[7] = 0x54; // T
  table.writeBigUInt64BE(bits, 8);
  const head = Buffer.alloc(14);
  head.writeUInt16BE(60, 0);
  head.writeBigUInt64BE(BigInt(bodySize), 4);
  head.writeUInt16BE((1 << 13) | (1 << 6) | (1 << 12), 12); // headers, timestamp, deliveryMode
  const stamp = Buffer.alloc(8);
  stamp.writeBigUInt64BE(bits, 0);
  return Buffer.concat([head, table, Buffer.from([2]), stamp]);
}

async function publishRaw(port: number, queue: string): Promise<void> {
  const client = await RawClient.open(port);
  try {
    await client.openChannel(1);
    client.sendMethod(1, 'queue.declare', {
      reserved1: 0,
      queue,
      passive: false,
      durable: true,
      exclusive: false,
      autoDelete: false,
      nowait: false,
      arguments: {},
    });
    await client.method('queue.declare-ok', 1);
    client.sendMethod(1, 'confirm.select', { nowait: false });
    await client.method('confirm.select-ok', 1);
    for (const bits of BITS) {
      const body = Buffer.from(bits.toString());
      client.sendMethod(1, 'basic.publish', {
        reserved1: 0,
        exchange: '',
        routingKey: queue,
        mandatory: false,
        immediate: false,
      });
      client.send(rawFrame(2, 1, contentHeader(bits, body.length)));
      client.send(rawFrame(3, 1, body));
    }
    // The last confirm, alone or `multiple`, confirms them all.
    await client.frame(
      (f) =>
        f.method?.name === 'basic.ack' &&
        (f.method.args as { deliveryTag: number }).deliveryTag === BITS.length,
      'the last confirm',
    );
  } finally {
    client.destroy();
  }
}

/** Gets every message of `queue` (deleting it) and returns the bits of [property, header]. */
async function receiveRaw(port: number, queue: string): Promise<[bigint, bigint][]> {
  const client = await RawClient.open(port);
  try {
    await client.openChannel(1);
    const got: [bigint, bigint][] = [];
    for (const _ of BITS) {
      client.sendMethod(1, 'basic.get', { reserved1: 0, queue, noAck: true });
      await client.method('basic.get-ok', 1);
      const header = await client.frame(
        (f) => f.type === FRAME_HEADER && f.channel === 1,
        'content header',
      );
      const p = header.payload;
      // The table's entry is its last 8 bytes; the timestamp property ends the header.
      const tableEnd = 14 + 4 + p.readUInt32BE(14);
      got.push([p.readBigUInt64BE(p.length - 8), p.readBigUInt64BE(tableEnd - 8)]);
    }
    client.sendMethod(1, 'queue.delete', {
      reserved1: 0,
      queue,
      ifUnused: false,
      ifEmpty: false,
      nowait: false,
    });
    await client.method('queue.delete-ok', 1);
    return got;
  } finally {
    client.destroy();
  }
}

const expected = BITS.map((bits) => [bits, bits]);
const queueName = () => `mqlite-timestamps-${randomBytes(4).toString('hex')}`;

describe('AMQP timestamps of any 64-bit value', () => {
  test('round-trip through the server, property and header, bit for bit', async () => {
    await using broker = await Broker.open();
    const server = await listen(broker);
    try {
      const queue = queueName();
      await publishRaw(server.port, queue);
      expect(await receiveRaw(server.port, queue)).toEqual(expected);
    } finally {
      await server.close();
    }
  });

  test('in the process, one beyond a Date is an AmqpTimestamp holding its seconds', async () => {
    await using broker = await Broker.open();
    const server = await listen(broker);
    try {
      const queue = queueName();
      await publishRaw(server.port, queue);
      const q = await broker.queue(queue);
      const seconds: unknown[] = [];
      for (let m = await q.get({ noAck: true }); m; m = await q.get({ noAck: true })) {
        const { timestamp, headers } = m.properties;
        expect(timestamp).toBeInstanceOf(Date);
        expect(headers?.at).toBeInstanceOf(Date);
        const at = headers!.at as Date;
        const wide = timestamp instanceof AmqpTimestamp;
        expect(at instanceof AmqpTimestamp).toBe(wide);
        seconds.push(
          wide
            ? [timestamp.seconds, (at as AmqpTimestamp).seconds]
            : [timestamp!.getTime() / 1000, at.getTime() / 1000],
        );
      }
      expect(seconds).toEqual([
        [0, 0],
        [1_700_000_000, 1_700_000_000],
        [-1, -1],
        [-(2n ** 63n), -(2n ** 63n)],
        [2n ** 63n - 1n, 2n ** 63n - 1n],
        [1n << 62n, 1n << 62n],
        [8_640_000_000_001n, 8_640_000_000_001n],
      ]);
    } finally {
      await server.close();
    }
  });

  test('round-trip through fs storage, reopened', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mqlite-timestamps-'));
    try {
      const queue = 'stamped';
      let broker = await Broker.open({ storage: fsStorage({ dir }) });
      let server = await listen(broker);
      await publishRaw(server.port, queue);
      await server.close();
      await broker.close();
      broker = await Broker.open({ storage: fsStorage({ dir }) });
      server = await listen(broker);
      try {
        expect(await receiveRaw(server.port, queue)).toEqual(expected);
      } finally {
        await server.close();
        await broker.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test.skipIf(onlyMqlite)('RabbitMQ returns them the same way', async () => {
    const queue = queueName();
    const port = Number(new URL(rabbitUrl).port || 5672);
    await publishRaw(port, queue);
    expect(await receiveRaw(port, queue)).toEqual(expected);
  });
});
