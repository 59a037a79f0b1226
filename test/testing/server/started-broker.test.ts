import { existsSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import {
  brokerGlobalSetup,
  brokerGlobalTeardown,
  MqliteContainer,
  startBroker,
} from '../../../src/testing/server/index.js';

/** Whether a TCP connection to `port` is accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('startBroker', () => {
  it('starts as testcontainers starts RabbitMQ: start(), then getAmqpUrl()', async () => {
    const container = await new MqliteContainer().start();
    try {
      expect(container.getAmqpUrl()).toBe(`amqp://guest:guest@127.0.0.1:${container.port}`);
      expect(container.getHost()).toBe('127.0.0.1');
      expect(container.getMappedPort(5672)).toBe(container.port);
      expect(container.getFirstMappedPort()).toBe(container.port);
      const connection = await amqplib.connect(container.getAmqpUrl());
      const channel = await connection.createChannel();
      await channel.assertQueue('jobs');
      channel.sendToQueue('jobs', Buffer.from('hello'));
      await expect
        .poll(async () => (await channel.get('jobs', { noAck: true })) || undefined)
        .toMatchObject({ content: Buffer.from('hello') });
      await connection.close();
    } finally {
      await container.stop();
    }
    expect(await accepts(container.port)).toBe(false);
  });

  it('stops with await using, and a second stop() does nothing', async () => {
    let port = 0;
    {
      await using started = await startBroker();
      port = started.port;
      expect(await accepts(port)).toBe(true);
    }
    expect(await accepts(port)).toBe(false);
  });

  it('on fs, restart() brings durable queues and persistent messages back; stop() removes the temporary directory', async () => {
    const started = await startBroker({ storage: 'fs' });
    const dir = started.dir!;
    expect(existsSync(dir)).toBe(true);
    const before = await amqplib.connect(started.url);
    const channel = await before.createConfirmChannel();
    await channel.assertQueue('durable-jobs', { durable: true });
    channel.sendToQueue('durable-jobs', Buffer.from('kept'), { persistent: true });
    await channel.waitForConfirms();
    const closed = new Promise((resolve) => before.once('close', resolve));
    await started.restart();
    await closed;
    expect(started.url).toBe(`amqp://guest:guest@127.0.0.1:${started.port}`);
    const after = await amqplib.connect(started.url);
    const again = await after.createChannel();
    const got = await again.get('durable-jobs', { noAck: true });
    expect(got).toMatchObject({ content: Buffer.from('kept') });
    await after.close();
    await started.stop();
    expect(existsSync(dir)).toBe(false);
  });

  it('on memory, restart() forgets every queue, as a RabbitMQ node its transient ones', async () => {
    await using started = await startBroker();
    await started.broker.queue('jobs', { durable: true });
    await started.restart();
    expect(started.broker.queues().map((q) => q.name)).toEqual([]);
  });

  it('clock: true gives the ManualClock that drives message TTL', async () => {
    await using started = await startBroker({ clock: true });
    const connection = await amqplib.connect(started.url);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('ttl', { messageTtl: 60_000 });
    channel.sendToQueue('ttl', Buffer.from('soon gone'));
    await channel.waitForConfirms();
    started.clock.advance(60_000);
    expect(await channel.checkQueue('ttl')).toMatchObject({ messageCount: 0 });
    await connection.close();
  });

  it('brokerGlobalSetup puts the URL in an environment variable for the run, and its teardown stops the broker', async () => {
    const teardown = await brokerGlobalSetup({ env: 'MQLITE_TEST_URL' })();
    const url = process.env.MQLITE_TEST_URL!;
    expect(url).toMatch(/^amqp:\/\/guest:guest@127\.0\.0\.1:\d+$/);
    const connection = await amqplib.connect(url);
    await connection.close();
    await teardown();
    expect(process.env.MQLITE_TEST_URL).toBeUndefined();
    expect(await accepts(Number(new URL(url).port))).toBe(false);
  });

  it("brokerGlobalTeardown stops the broker of the run, as Jest's globalTeardown, which gets no teardown", async () => {
    // Jest ignores what its globalSetup returns.
    await brokerGlobalSetup({ env: 'MQLITE_JEST_URL' })();
    const url = process.env.MQLITE_JEST_URL!;
    expect(await accepts(Number(new URL(url).port))).toBe(true);
    await brokerGlobalTeardown()();
    expect(process.env.MQLITE_JEST_URL).toBeUndefined();
    expect(await accepts(Number(new URL(url).port))).toBe(false);
    // A second teardown, or one without a setup, does nothing.
    await brokerGlobalTeardown()();
  });
  it('management: true serves the management API on its own port, kept across restart(), as a test helper for RabbitMQ reads it', async () => {
    await using rabbit = await startBroker({ management: true });
    const api = rabbit.getManagementUrl();
    expect(rabbit.managementUrl).toBe(api);
    expect(rabbit.getMappedPort(15672)).toBe(Number(new URL(api).port));
    const auth = { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` };
    await rabbit.broker.queue('jobs');
    await rabbit.broker.publish('', 'one', { routingKey: 'jobs' });
    const depth = async () => {
      const response = await fetch(`${api}/api/queues/%2F/jobs`, { headers: auth });
      return ((await response.json()) as { messages: number }).messages;
    };
    await expect.poll(depth).toBe(1);
    await rabbit.restart();
    expect(rabbit.getManagementUrl()).toBe(api);
    const overview = await fetch(`${api}/api/overview`, { headers: auth });
    expect(overview.status).toBe(200);
  });

  it('without management, getManagementUrl() says how to ask for it', async () => {
    await using rabbit = await startBroker();
    expect(rabbit.managementUrl).toBeUndefined();
    expect(() => rabbit.getManagementUrl()).toThrow(/management: true/);
    expect(() => rabbit.getMappedPort(15672)).toThrow(RangeError);
  });
});
