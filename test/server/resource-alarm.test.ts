/**
 * The server's resource alarms, with RabbitMQ's semantics: above the memory high watermark, or
 * below the disk free limit, a publishing connection is blocked (told so when it announced
 * `connection.blocked`), its publishes wait unread, and it is unblocked and read again once
 * every alarm clears. Readings are injected and taken on a manual clock, so nothing waits for
 * real memory, a full disk or time.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import amqplib from 'amqplib';
import { afterEach, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type AlarmEvent, CHANNELS } from '../../src/diagnostics.js';
import { freeLimit } from '../../src/server/disk-alarm.js';
import { highWatermark } from '../../src/server/memory-alarm.js';
import { type AmqpServer, listen } from '../../src/server/server.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { RawClient } from './raw-client.js';

const INTERVAL = 2500;
const LIMIT = 1_000_000;

const DISK_LIMIT = 50_000_000;

interface Alarmed {
  broker: Broker;
  server: AmqpServer;
  clock: ManualClock;
  /** Sets the memory the next reading finds and lets the clock take that reading. */
  use(bytes: number): void;
  /** Sets the free disk space the next reading finds and lets the clock take that reading. */
  free(bytes: number): void;
}

const opened: Alarmed[] = [];
afterEach(async () => {
  for (const { server, broker } of opened.splice(0)) {
    await server.close();
    await broker.close();
  }
});

async function alarmedServer(): Promise<Alarmed> {
  let used = 0;
  let free = DISK_LIMIT * 10;
  const clock = new ManualClock();
  const broker = await Broker.open();
  const server = await listen(broker, {
    clock,
    heartbeat: 0,
    memory: { absolute: LIMIT, intervalMs: INTERVAL, read: () => used },
    disk: { dir: '.', freeLimit: '50MB', intervalMs: INTERVAL, read: () => free },
  });
  const alarmed = {
    broker,
    server,
    clock,
    use(bytes: number) {
      used = bytes;
      clock.advance(INTERVAL);
    },
    free(bytes: number) {
      free = bytes;
      clock.advance(INTERVAL);
    },
  };
  opened.push(alarmed);
  return alarmed;
}

/** Polls `check` until it holds, failing after a generous deadline. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A few turns of the event loop and of the sockets between two local processes. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

describe('resource alarms', () => {
  test('a publisher is blocked above the watermark, its publish held, then unblocked and delivered', async () => {
    const { broker, server, use } = await alarmedServer();
    const queue = await broker.queue('alarm-q');
    const publisher = await amqplib.connect(server.url);
    const events: string[] = [];
    publisher.on('blocked', (reason: string) => events.push(`blocked: ${reason}`));
    publisher.on('unblocked', () => events.push('unblocked'));
    const channel = await publisher.createChannel();
    const consumer = await amqplib.connect(server.url);
    const consuming = await consumer.createChannel();
    const received: string[] = [];
    await consuming.consume(
      'alarm-q',
      (msg) => {
        if (msg) received.push(msg.content.toString());
      },
      { noAck: true },
    );

    channel.sendToQueue('alarm-q', Buffer.from('before'));
    await eventually(() => received.length === 1, 'the first delivery');

    use(LIMIT);
    expect(server.alarms()).toEqual([{ resource: 'memory', used: LIMIT, limit: LIMIT }]);
    channel.sendToQueue('alarm-q', Buffer.from('during'));
    await eventually(() => events.length === 1, 'connection.blocked');
    expect(events).toEqual(['blocked: low on memory']);
    await settle();
    expect(received).toEqual(['before']);
    expect(queue.stats().messages).toBe(0);

    use(LIMIT - 1);
    expect(server.alarms()).toEqual([]);
    await eventually(() => received.length === 2, 'the held publish');
    expect(received).toEqual(['before', 'during']);
    // The publisher reads connection.unblocked on its own connection, in its own time.
    await eventually(() => events.length === 2, 'connection.unblocked');
    expect(events).toEqual(['blocked: low on memory', 'unblocked']);
    await publisher.close();
    await consumer.close();
  });

  test('consumers and connections that do not publish go on under the alarm', async () => {
    const { broker, server, use } = await alarmedServer();
    const queue = await broker.queue('alarm-consume');
    await queue.publish('stored before');
    use(LIMIT * 2);
    const connection = await amqplib.connect(server.url);
    const blocked: string[] = [];
    connection.on('blocked', (reason: string) => blocked.push(reason));
    const channel = await connection.createChannel();
    // Declaring and consuming are not publishing: no block.
    await channel.checkQueue('alarm-consume');
    const got = await channel.get('alarm-consume', { noAck: true });
    expect(got === false ? got : got.content.toString()).toBe('stored before');
    expect(blocked).toEqual([]);
    await connection.close();
  });

  test('a client without the connection.blocked capability is held without being told', async () => {
    const { broker, server, use } = await alarmedServer();
    const queue = await broker.queue('alarm-raw');
    const client = await RawClient.open(server.port);
    await client.openChannel(1);
    use(LIMIT);
    client.publish(1, '', 'alarm-raw', 'held');
    await settle();
    expect(queue.stats().messages).toBe(0);
    use(0);
    await eventually(() => queue.stats().messages === 1, 'the held publish');
    expect(client.count((frame) => frame.method?.name === 'connection.blocked')).toBe(0);
    expect(client.count((frame) => frame.method?.name === 'connection.unblocked')).toBe(0);
    client.destroy();
  });

  test('the alarm going on and off is published on mqlite:alarm', async () => {
    const events: AlarmEvent[] = [];
    const listener = (event: unknown) => events.push(event as AlarmEvent);
    subscribe(CHANNELS.alarm, listener);
    try {
      const { use } = await alarmedServer();
      use(LIMIT + 5);
      use(LIMIT + 6);
      use(10);
      expect(events).toEqual([
        { resource: 'memory', raised: true, used: LIMIT + 5, limit: LIMIT },
        { resource: 'memory', raised: false, used: 10, limit: LIMIT },
      ]);
    } finally {
      unsubscribe(CHANNELS.alarm, listener);
    }
  });

  test('a publisher is blocked while the disk is low, and while memory is too, told both', async () => {
    const { broker, server, use, free } = await alarmedServer();
    const queue = await broker.queue('disk-q');
    const publisher = await amqplib.connect(server.url);
    const events: string[] = [];
    publisher.on('blocked', (reason: string) => events.push(`blocked: ${reason}`));
    publisher.on('unblocked', () => events.push('unblocked'));
    const channel = await publisher.createChannel();

    free(DISK_LIMIT - 1);
    expect(server.alarms()).toEqual([
      { resource: 'disk', free: DISK_LIMIT - 1, limit: DISK_LIMIT },
    ]);
    use(LIMIT);
    channel.sendToQueue('disk-q', Buffer.from('held'));
    await eventually(() => events.length === 1, 'connection.blocked');
    expect(events).toEqual(['blocked: low on memory & low on disk']);

    // One alarm clearing is not enough: the publish waits for both.
    use(0);
    expect(server.alarms()).toEqual([
      { resource: 'disk', free: DISK_LIMIT - 1, limit: DISK_LIMIT },
    ]);
    await settle();
    expect(queue.stats().messages).toBe(0);
    free(DISK_LIMIT);
    expect(server.alarms()).toEqual([]);
    await eventually(() => queue.stats().messages === 1, 'the held publish');
    // The queue has it as the server reads it; the client reads connection.unblocked after.
    await eventually(() => events.length === 2, 'connection.unblocked');
    expect(events).toEqual(['blocked: low on memory & low on disk', 'unblocked']);

    free(0);
    channel.sendToQueue('disk-q', Buffer.from('held again'));
    await eventually(() => events.length === 3, 'connection.blocked');
    expect(events.at(-1)).toBe('blocked: low on disk');
    free(DISK_LIMIT);
    await eventually(() => queue.stats().messages === 2, 'the publish held again');
    await publisher.close();
  });

  test('the disk alarm going on and off is published on mqlite:alarm', async () => {
    const events: AlarmEvent[] = [];
    const listener = (event: unknown) => events.push(event as AlarmEvent);
    subscribe(CHANNELS.alarm, listener);
    try {
      const { free } = await alarmedServer();
      free(10);
      free(DISK_LIMIT);
      expect(events).toEqual([
        { resource: 'disk', raised: true, free: 10, limit: DISK_LIMIT },
        { resource: 'disk', raised: false, free: DISK_LIMIT, limit: DISK_LIMIT },
      ]);
    } finally {
      unsubscribe(CHANNELS.alarm, listener);
    }
  });

  test('the disk alarm reads the free space of the data directory by default', async () => {
    const broker = await Broker.open();
    const clock = new ManualClock();
    const dir = process.cwd();
    const never = await listen(broker, { clock, disk: { dir, freeLimit: 0 } });
    expect(never.alarms()).toEqual([]);
    await never.close();
    // More than any disk has free: the first reading raises it.
    const always = await listen(broker, { clock, disk: { dir, freeLimit: '8000000GiB' } });
    expect(always.alarms()).toEqual([
      { resource: 'disk', free: expect.any(Number), limit: 8_000_000 * 2 ** 30 },
    ]);
    await always.close();
    await broker.close();
  });

  test('the disk free limit is 50 MB by default, bytes with a unit, or relative to memory', () => {
    expect(freeLimit({})).toBe(50_000_000);
    expect(freeLimit({ freeLimit: 1234 })).toBe(1234);
    expect(freeLimit({ freeLimit: '50MB' })).toBe(50_000_000);
    expect(freeLimit({ freeLimit: '2GiB' })).toBe(2 * 2 ** 30);
    expect(freeLimit({ freeLimit: '3k' })).toBe(3072);
    expect(freeLimit({ memRelative: 1.5, total: 1000, freeLimit: 5 })).toBe(1500);
    expect(() => freeLimit({ freeLimit: '50 bananas' })).toThrow(RangeError);
    expect(() => freeLimit({ freeLimit: 'constructor' })).toThrow(RangeError);
    expect(() => freeLimit({ freeLimit: -1 })).toThrow(RangeError);
    expect(() => freeLimit({ memRelative: -1 })).toThrow(RangeError);
  });

  test('the watermark is 0.4 of the memory by default, or relative, or absolute', () => {
    const total = 10 * 1024 ** 3;
    expect(highWatermark({ total })).toBe(Math.floor(total * 0.4));
    expect(highWatermark({ total, relative: 0.5 })).toBe(total / 2);
    expect(highWatermark({ total, relative: 0.5, absolute: 123 })).toBe(123);
    expect(() => highWatermark({ relative: 2 })).toThrow(RangeError);
    expect(() => highWatermark({ absolute: -1 })).toThrow(RangeError);
  });
});
