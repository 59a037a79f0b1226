/**
 * The server's memory alarm, with RabbitMQ's semantics: above the high watermark a publishing
 * connection is blocked (told so when it announced `connection.blocked`), its publishes wait
 * unread, and it is unblocked and read again once memory falls below. Memory readings are
 * injected and taken on a manual clock, so nothing waits for real memory or time.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import amqplib from 'amqplib';
import { afterEach, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type AlarmEvent, CHANNELS } from '../../src/diagnostics.js';
import { highWatermark } from '../../src/server/memory-alarm.js';
import { type AmqpServer, listen } from '../../src/server/server.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { RawClient } from './raw-client.js';

const INTERVAL = 2500;
const LIMIT = 1_000_000;

interface Alarmed {
  broker: Broker;
  server: AmqpServer;
  clock: ManualClock;
  /** Sets the memory the next reading finds and lets the clock take that reading. */
  use(bytes: number): void;
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
  const clock = new ManualClock();
  const broker = await Broker.open();
  const server = await listen(broker, {
    clock,
    heartbeat: 0,
    memory: { absolute: LIMIT, intervalMs: INTERVAL, read: () => used },
  });
  const alarmed = {
    broker,
    server,
    clock,
    use(bytes: number) {
      used = bytes;
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

describe('memory alarm', () => {
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

  test('the watermark is 0.4 of the memory by default, or relative, or absolute', () => {
    const total = 10 * 1024 ** 3;
    expect(highWatermark({ total })).toBe(Math.floor(total * 0.4));
    expect(highWatermark({ total, relative: 0.5 })).toBe(total / 2);
    expect(highWatermark({ total, relative: 0.5, absolute: 123 })).toBe(123);
    expect(() => highWatermark({ relative: 2 })).toThrow(RangeError);
    expect(() => highWatermark({ absolute: -1 })).toThrow(RangeError);
  });
});
