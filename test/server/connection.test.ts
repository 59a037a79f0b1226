import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqplib from 'amqplib';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { holdFsyncs } from '../support/held-fsyncs.js';
import { RawClient } from './raw-client.js';

/** Polls `read` until it holds, with a generous deadline. */
async function until(read: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 15_000;
  while (!read()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('heartbeats', () => {
  test('the server sends heartbeats and drops a peer silent for two intervals', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open();
    await using server = await listen(broker, { clock, heartbeat: 10 });
    const client = await RawClient.open(server.port, { heartbeat: 10 });
    // Half an interval without output: the server beats.
    clock.advance(5_000);
    await client.frame((f) => f.type === 8, 'a heartbeat');
    clock.advance(5_000);
    await client.frame((f) => f.type === 8, 'a second heartbeat');
    expect(client.closed).toBe(false);
    // Two intervals without a byte from the client: dropped.
    clock.advance(10_000);
    await client.waitClosed();
    await until(() => server.connections === 0, 'the connection to be released');
  });

  test('a peer that beats stays connected', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open();
    await using server = await listen(broker, { clock, heartbeat: 10 });
    const client = await RawClient.open(server.port, { heartbeat: 10 });
    const heartbeat = Buffer.from([8, 0, 0, 0, 0, 0, 0, 0xce]);
    for (let i = 1; i <= 6; i++) {
      client.send(heartbeat);
      // A round trip: the server has read the heartbeat before time moves.
      await client.openChannel(i);
      clock.advance(5_000);
    }
    await client.frame((f) => f.type === 8, 'a heartbeat');
    expect(client.closed).toBe(false);
    client.destroy();
  });

  test('heartbeat 0 in tune-ok turns heartbeats off', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open();
    await using server = await listen(broker, { clock, heartbeat: 10 });
    const client = await RawClient.open(server.port, { heartbeat: 0 });
    clock.advance(60_000);
    await client.openChannel(1);
    expect(client.count((f) => f.type === 8)).toBe(0);
    client.destroy();
  });
});

describe('after close-ok', () => {
  /** Closes from the client's side and waits for close-ok; the client keeps its socket open. */
  async function closeFromClient(client: RawClient): Promise<void> {
    client.sendMethod(0, 'connection.close', {
      replyCode: 200,
      replyText: 'bye',
      classId: 0,
      methodId: 0,
    });
    await client.method('connection.close-ok', 0);
  }

  test.each([
    ['30 s without heartbeats', 0, 30_000],
    ['a heartbeat interval when shorter', 5, 5_000],
  ])(
    'a client that does not close its socket is dropped after %s, as on RabbitMQ',
    async (_, seconds, lingerMs) => {
      const clock = new ManualClock();
      await using broker = await Broker.open();
      await using server = await listen(broker, { clock, heartbeat: 60 });
      const client = await RawClient.open(server.port, { heartbeat: seconds });
      await closeFromClient(client);
      // What the client still sends is read and dropped.
      for (let i = 0; i < 100; i++) client.send(Buffer.from([8, 0, 0, 0, 0, 0, 0, 0xce]));
      clock.advance(lingerMs - 1);
      expect(client.closed).toBe(false);
      expect(server.connections).toBe(1);
      clock.advance(1);
      await client.waitClosed();
      await until(() => server.connections === 0, 'the connection to end');
    },
  );

  test('the server closing drops a connection past its close-ok at once', async () => {
    await using broker = await Broker.open();
    const server = await listen(broker, { clock: new ManualClock() });
    const client = await RawClient.open(server.port);
    await closeFromClient(client);
    await server.close();
    await client.waitClosed();
    expect(server.connections).toBe(0);
  });
});

describe('flow control', () => {
  test('a consumer whose socket does not drain stops receiving; it gets the rest when it reads', async () => {
    await using broker = await Broker.open();
    await using server = await listen(broker);
    const queue = await broker.queue('flow', { durable: false });
    const body = new Uint8Array(32 * 1024);
    const total = 1000;
    for (let i = 0; i < total; i++) await queue.publish(body);
    const client = await RawClient.open(server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'basic.consume', {
      reserved1: 0,
      queue: 'flow',
      consumerTag: 'c',
      noLocal: false,
      noAck: true,
      exclusive: false,
      nowait: false,
      arguments: {},
    });
    client.reading(false);
    // Without flow control, every message would leave the queue in one go (32 MB in buffers).
    let last = -1;
    let steady = 0;
    await until(() => {
      const now = queue.messageCount;
      steady = now === last ? steady + 1 : 0;
      last = now;
      return steady >= 20;
    }, 'the queue to stop draining');
    expect(queue.messageCount).toBeGreaterThan(total / 2);
    client.reading(true);
    await until(
      () => client.count((f) => f.method?.name === 'basic.deliver') === total,
      'every delivery',
    );
    expect(queue.messageCount).toBe(0);
    client.destroy();
  });
});

describe('flow control of publishers', () => {
  test('a connection whose publishes wait for storage is not read until storage catches up', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-server-'));
    // fsyncs held until released: every publish waits for storage.
    const fsyncs = holdFsyncs();
    try {
      await using broker = await Broker.open({ storage: fsStorage({ dir, io: fsyncs.io }) });
      await using server = await listen(broker);
      await broker.queue('slow', { durable: true });
      let routed = 0;
      const publish = broker.publish.bind(broker);
      broker.publish = (...args) => {
        routed++;
        return publish(...args);
      };
      const client = await RawClient.open(server.port);
      await client.openChannel(1);
      const total = 5000;
      fsyncs.hold();
      for (let i = 0; i < total; i++) client.publish(1, '', 'slow', 'x');
      const release = () => fsyncs.release();
      try {
        let last = -1;
        let steady = 0;
        await until(() => {
          steady = routed === last ? steady + 1 : 0;
          last = routed;
          return steady >= 20;
        }, 'the server to stop reading');
        // Stopped past the high-water mark, with most of what was sent still unread.
        expect(routed).toBeGreaterThanOrEqual(1024);
        expect(routed).toBeLessThan(total);
        release();
        await until(() => routed === total, 'every publish read once storage caught up');
      } finally {
        release();
      }
      client.destroy();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('server', () => {
  test('url, connections, and close() forcing clients off with 320', async () => {
    await using broker = await Broker.open();
    const server = await listen(broker, { port: 0 });
    expect(server.url).toBe(`amqp://guest:guest@127.0.0.1:${server.port}`);
    const connection = await amqplib.connect(server.url);
    const closed = new Promise<Error | undefined>((resolve) => {
      connection.on('error', () => {});
      connection.on('close', resolve);
    });
    expect(server.connections).toBe(1);
    await server.close();
    expect(String(await closed)).toMatch(/320.*CONNECTION_FORCED/);
    expect(server.connections).toBe(0);
    await expect(amqplib.connect(server.url)).rejects.toThrow();
  });

  test('a connection going away requeues its unacked messages and deletes its exclusive queues', async () => {
    await using broker = await Broker.open();
    await using server = await listen(broker);
    const jobs = await broker.queue('jobs', { durable: false });
    await jobs.publish('one');
    const connection = await amqplib.connect(server.url);
    const ch = await connection.createChannel();
    await ch.assertQueue('mine', { exclusive: true });
    const got = new Promise<void>((resolve) => ch.consume('jobs', () => resolve()));
    await got;
    expect(jobs.messageCount).toBe(0);
    await connection.close();
    await until(() => jobs.messageCount === 1, 'the unacked message back in its queue');
    expect(broker.queues().map((q) => q.name)).toEqual(['jobs']);
  });

  test('refuses a bad heartbeat option', async () => {
    await using broker = await Broker.open();
    await expect(listen(broker, { heartbeat: -1 })).rejects.toThrow(RangeError);
  });
});
