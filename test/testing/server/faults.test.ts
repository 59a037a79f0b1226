import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { AMQPClient } from '@cloudamqp/amqp-client';
import amqplib from 'amqplib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHANNELS, type FaultEvent } from '../../../src/diagnostics.js';
import { type StartedBroker, startBroker } from '../../../src/testing/server/index.js';

let started: StartedBroker;
const faults: FaultEvent[] = [];
const onFault = (event: unknown) => faults.push(event as FaultEvent);

beforeEach(async () => {
  faults.length = 0;
  subscribe(CHANNELS.fault, onFault);
  started = await startBroker();
});

afterEach(async () => {
  unsubscribe(CHANNELS.fault, onFault);
  await started.stop();
});

/** An amqplib connection giving `name` as its connection_name, and how it ended. */
async function named(name: string) {
  const connection = await amqplib.connect(started.url, {
    clientProperties: { connection_name: name },
  });
  connection.on('error', () => {});
  const ended = new Promise<Error | undefined>((resolve) =>
    connection.once('close', (error?: Error) => resolve(error)),
  );
  return { connection, ended };
}

describe('faults', () => {
  it('close({ name }) closes those connections with 320 CONNECTION_FORCED and no other', async () => {
    const a = await named('orders-worker');
    const b = await named('billing-worker');
    expect(started.faults.connections().map((c) => c.name)).toEqual([
      'orders-worker',
      'billing-worker',
    ]);
    expect(await started.faults.close({ name: 'orders-worker' })).toBe(1);
    const error = (await a.ended) as Error & { code?: number };
    expect(error.code).toBe(320);
    expect(error.message).toContain('CONNECTION_FORCED - Closed via management plugin');
    const channel = await b.connection.createChannel();
    await channel.assertQueue('', { exclusive: true });
    expect(started.faults.connections().map((c) => c.name)).toEqual(['billing-worker']);
    expect(faults).toEqual([
      {
        fault: 'close',
        peer: expect.any(String),
        name: 'orders-worker',
        detail: '320 Closed via management plugin',
      },
    ]);
    await b.connection.close();
  });

  it('close() with a RegExp and a reason closes every matching connection', async () => {
    const a = await named('worker-1');
    const b = await named('worker-2');
    const c = await named('api');
    expect(await started.faults.close({ name: /^worker-/ }, { reason: 'maintenance' })).toBe(2);
    for (const ended of [a.ended, b.ended]) {
      expect((await ended)?.message).toContain('CONNECTION_FORCED - maintenance');
    }
    expect(started.faults.connections().map((x) => x.name)).toEqual(['api']);
    await c.connection.close();
  });

  it('close({ peer }) closes that one connection', async () => {
    const a = await named('same');
    const b = await named('same');
    const [first] = started.faults.connections();
    expect(await started.faults.close({ peer: first!.peer })).toBe(1);
    await a.ended;
    expect(started.faults.connections()).toHaveLength(1);
    await b.connection.close();
  });

  it('close({}, { drop: true }) drops every connection without a close frame', async () => {
    const a = await named('a');
    const b = await named('b');
    expect(await started.faults.close({}, { drop: true })).toBe(2);
    for (const ended of [a.ended, b.ended]) {
      const error = (await ended) as Error & { code?: unknown };
      // amqplib's words for a socket that ended without connection.close.
      expect(error.message).toMatch(/Unexpected close|ECONNRESET|socket closed/i);
      expect(error.code).not.toBe(320);
    }
    expect(faults.map((f) => f.fault)).toEqual(['drop', 'drop']);
  });

  it('unacknowledged messages of a dropped connection are requeued: nothing stored is lost', async () => {
    const a = await named('consumer');
    const channel = await a.connection.createChannel();
    await channel.assertQueue('kept', { durable: true });
    channel.sendToQueue('kept', Buffer.from('one'), { persistent: true });
    const delivered = new Promise((resolve) => channel.consume('kept', resolve));
    await delivered;
    await started.faults.close({ name: 'consumer' }, { drop: true });
    await a.ended;
    const other = await amqplib.connect(started.url);
    const check = await other.createChannel();
    await expect
      .poll(async () => (await check.get('kept', { noAck: true })) || undefined)
      .toMatchObject({ content: Buffer.from('one'), fields: { redelivered: true } });
    await other.close();
  });

  it('refuse(2) resets the next two connection attempts, then accepts again; open connections go on', async () => {
    const open = await named('open-before');
    started.faults.refuse(2);
    await expect(amqplib.connect(started.url)).rejects.toThrow(
      /ECONNRESET|socket closed|Unexpected close/i,
    );
    await expect(amqplib.connect(started.url)).rejects.toThrow(
      /ECONNRESET|socket closed|Unexpected close/i,
    );
    expect(started.faults.refusing).toBe(0);
    const connection = await amqplib.connect(started.url);
    await connection.close();
    await (await open.connection.createChannel()).assertQueue('', { exclusive: true });
    await open.connection.close();
    expect(faults).toEqual([
      { fault: 'refuse', detail: 'reset' },
      { fault: 'refuse', detail: 'reset' },
    ]);
  });

  it.each([
    [530, "NOT_ALLOWED - access to vhost '/' refused for user 'guest'"],
    [541, "INTERNAL_ERROR - access to vhost '/' refused for user 'guest': vhost '/' is down"],
  ] as const)(
    "refuse(1, %i) closes the handshake with RabbitMQ's code and text",
    async (code, text) => {
      started.faults.refuse(1, code);
      // amqp-client words the refusal with the server's reply text and code.
      await expect(new AMQPClient(started.url).connect()).rejects.toThrow(`${text} (${code})`);
      const connection = await amqplib.connect(started.url);
      await connection.close();
    },
  );

  it('refuse() of a count that is not a whole number, or an unknown way, is a RangeError', () => {
    expect(() => started.faults.refuse(-1)).toThrow(RangeError);
    expect(() => started.faults.refuse(1.5)).toThrow(RangeError);
    expect(() => started.faults.refuse(1, 403 as 530)).toThrow(RangeError);
  });

  it('closeChannel() closes that channel with 406 or 404; the connection and its other channels stay', async () => {
    const a = await named('app');
    const first = await a.connection.createChannel();
    const second = await a.connection.createChannel();
    first.on('error', () => {});
    const closed = new Promise<Error & { code?: number }>((resolve) =>
      first.once('error', resolve),
    );
    expect(started.faults.closeChannel({ name: 'app' }, 1, 406, 'stale lease')).toBe(1);
    const error = await closed;
    expect(error.code).toBe(406);
    expect(error.message).toContain('PRECONDITION_FAILED - stale lease');
    await second.assertQueue('', { exclusive: true });
    expect(started.faults.closeChannel({ name: 'app' }, 7, 404)).toBe(0);
    expect(() => started.faults.closeChannel({}, 2, 320)).toThrow(RangeError);
    await a.connection.close();
  });

  it('closeChannel() with 541 closes the whole connection, as AMQP has INTERNAL_ERROR', async () => {
    const a = await named('app');
    await a.connection.createChannel();
    started.faults.closeChannel({ name: 'app' }, 1, 541);
    const error = (await a.ended) as Error & { code?: number };
    expect(error.code).toBe(541);
  });

  it('delay() holds every frame to that connection until the clock has moved by the delay', async () => {
    await using timed = await startBroker({ clock: true });
    const slow = await amqplib.connect(timed.url, {
      clientProperties: { connection_name: 'slow' },
    });
    const fast = await amqplib.connect(timed.url, {
      clientProperties: { connection_name: 'fast' },
    });
    const slowChannel = await slow.createChannel();
    expect(timed.faults.delay(5000, { name: 'slow' })).toBe(1);
    let answered = false;
    const declared = slowChannel.assertQueue('delayed').then(() => {
      answered = true;
    });
    // The server did declare it: only its answer waits.
    await expect.poll(() => timed.broker.queues().map((q) => q.name)).toContain('delayed');
    await (await fast.createChannel()).assertQueue('prompt');
    timed.clock.advance(4999);
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    timed.clock.advance(1);
    await declared;
    timed.faults.delay(0, { name: 'slow' });
    await slowChannel.assertQueue('prompt-again');
    expect(() => timed.faults.delay(-1)).toThrow(RangeError);
    await Promise.all([slow.close(), fast.close()]);
  });

  it("stall() stops answering a connection: the client's heartbeat check gives up on it", async () => {
    await using slow = await startBroker({ server: { heartbeat: 1 } });
    const connection = await amqplib.connect(slow.url, {
      clientProperties: { connection_name: 'stalled' },
    });
    connection.on('error', () => {});
    const ended = new Promise<Error | undefined>((resolve) => connection.once('close', resolve));
    const other = await amqplib.connect(slow.url);
    expect(slow.faults.stall({ name: 'stalled' })).toBe(1);
    expect((await ended)?.message).toMatch(/heartbeat/i);
    await (await other.createChannel()).assertQueue('', { exclusive: true });
    await other.close();
  });
});

describe('block()', () => {
  it('blocks a publisher as the memory alarm does: its publish is held until unblock(), consumers go on', async () => {
    const publisher = await named('publisher');
    const consumer = await named('consumer');
    const events: string[] = [];
    publisher.connection.on('blocked', (reason: string) => events.push(`blocked: ${reason}`));
    publisher.connection.on('unblocked', () => events.push('unblocked'));
    const confirms = await publisher.connection.createConfirmChannel();
    await confirms.assertQueue('held');
    await confirms.assertQueue('flowing');
    confirms.sendToQueue('flowing', Buffer.from('queued before'));
    await confirms.waitForConfirms();
    const consuming = await consumer.connection.createChannel();
    started.faults.block();
    let confirmed = false;
    confirms.sendToQueue('held', Buffer.from('while blocked'), {}, () => {
      confirmed = true;
    });
    await expect.poll(() => events).toEqual(['blocked: low on memory']);
    // The publish met the alarm: its content waits unread, nothing is routed or confirmed.
    expect(started.broker.queues().find((q) => q.name === 'held')?.messages).toBe(0);
    expect(confirmed).toBe(false);
    // Consuming connections are not blocked.
    const delivered = new Promise((resolve) => consuming.consume('flowing', resolve));
    await delivered;
    started.faults.unblock();
    await expect.poll(() => events).toEqual(['blocked: low on memory', 'unblocked']);
    await expect.poll(() => confirmed).toBe(true);
    expect(started.broker.queues().find((q) => q.name === 'held')?.messages).toBe(1);
    expect(faults).toEqual([{ fault: 'block' }, { fault: 'unblock' }]);
    await Promise.all([publisher.connection.close(), consumer.connection.close()]);
  });

  it('a connection opened while blocked is blocked at its first publish', async () => {
    started.faults.block();
    const late = await named('late');
    const blocked = new Promise((resolve) => late.connection.once('blocked', resolve));
    const channel = await late.connection.createChannel();
    channel.sendToQueue('anywhere', Buffer.from('x'));
    expect(await blocked).toBe('low on memory');
    const unblocked = new Promise((resolve) => late.connection.once('unblocked', resolve));
    started.faults.unblock();
    await unblocked;
    await late.connection.close();
  });
});

describe('a fault hits only its target', () => {
  it('each fault aimed at one connection leaves the other working, with nothing lost', async () => {
    await using timed = await startBroker({ clock: true, server: { heartbeat: 0 } });
    const open = async (name: string) => {
      const connection = await amqplib.connect(timed.url, {
        clientProperties: { connection_name: name },
      });
      connection.on('error', () => {});
      const channel = await connection.createConfirmChannel();
      channel.on('error', () => {});
      return { connection, channel };
    };
    const _target = await open('target');
    const bystander = await open('bystander');
    await bystander.channel.assertQueue('bystander-jobs');
    /** The bystander publishes, is confirmed and reads back what it sent. */
    const bystanderWorks = async (body: string) => {
      bystander.channel.sendToQueue('bystander-jobs', Buffer.from(body));
      await bystander.channel.waitForConfirms();
      const got = await bystander.channel.get('bystander-jobs', { noAck: true });
      expect(got === false ? undefined : got.content.toString()).toBe(body);
    };
    expect(timed.faults.delay(60_000, { name: 'target' })).toBe(1);
    await bystanderWorks('while the target is delayed');
    timed.faults.delay(0, { name: 'target' });
    timed.clock.advance(60_000);
    expect(timed.faults.closeChannel({ name: 'target' }, 1, 406)).toBe(1);
    await bystanderWorks('while a channel of the target is closed');
    expect(timed.faults.stall({ name: 'target' })).toBe(1);
    await bystanderWorks('while the target is stalled');
    expect(await timed.faults.close({ name: 'target' }, { drop: true })).toBe(1);
    await bystanderWorks('after the target was dropped');
    expect(timed.faults.connections().map((c) => c.name)).toEqual(['bystander']);
    await bystander.connection.close();
  });
});
