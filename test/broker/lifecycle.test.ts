import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { LastValueQueue } from '../../src/queues/lvq/last-value-queue.js';
import type { PriorityQueue, Queue } from '../../src/queues/priority-queue.js';
import type { StreamQueue } from '../../src/queues/stream/stream-queue.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

describe('listing, purging and deleting', () => {
  it('lists every queue with its kind, flags, arguments and stats', async () => {
    await using broker = await Broker.open();
    const jobs = (await broker.queue('jobs', { maxPriority: 3 })) as PriorityQueue;
    await jobs.publish('12345', { priority: 2 });
    await jobs.publish('678');
    const taken = await jobs.get({ noAck: false });
    const events = await broker.queue('events', { type: 'stream' });
    await events.publish('e');
    await (events as StreamQueue).subscribe({ tag: 'reader', prefetch: 10 }, () => {});
    expect(broker.queues()).toEqual([
      {
        name: 'events',
        kind: 'stream',
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: { 'x-queue-type': 'stream' },
        effectiveArguments: { 'x-queue-type': 'stream' },
        messages: 1,
        messagesReady: 1,
        messagesUnacknowledged: 0,
        bytes: expect.any(Number),
        consumers: 1,
      },
      {
        name: 'jobs',
        kind: 'priority',
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: { 'x-max-priority': 3 },
        effectiveArguments: { 'x-max-priority': 3 },
        messages: 2,
        messagesReady: 1,
        messagesUnacknowledged: 1,
        bytes: 8,
        consumers: 0,
      },
    ]);
    await taken?.ack();
  });

  it('purges ready messages by name and reports how many went', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('q');
    await q.publish('a');
    await q.publish('b');
    expect(await broker.purge('q')).toBe(2);
    expect(broker.queues()[0]?.messages).toBe(0);
    await expect(broker.purge('nope')).rejects.toMatchObject({ replyCode: 404 });
  });

  it('deletes a queue with its messages; deleting a missing one answers 0', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('q', { maxPriority: 1 });
    await q.publish('a');
    expect(await broker.deleteQueue('q')).toBe(1);
    expect(broker.queues()).toEqual([]);
    expect(await broker.deleteQueue('q')).toBe(0);
    // The name is free again, for any kind.
    expect((await broker.queue('q', { type: 'stream' })).name).toBe('q');
  });

  it("keeps a deleted queue's handle as a name: publishes unroutable, get 404, a new queue of that name reached", async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('q');
    const session = broker.session();
    const viaSession = await session.queue('q');
    await viaSession.get(); // binds the session's get before the delete
    await q.delete();
    await expect(q.publish('dropped')).resolves.toBeUndefined();
    // As the AMQP client's queue handle, whose publish takes `mandatory` beside the properties.
    const mandatory = { mandatory: true } as Parameters<typeof q.publish>[1];
    await expect(q.publish('x', mandatory)).rejects.toMatchObject({ replyCode: 312 });
    for (const handle of [q, viaSession]) {
      await expect(handle.get()).rejects.toMatchObject({
        replyCode: 404,
        message: "NOT_FOUND - no queue 'q' in vhost '/'",
      });
      await expect(handle.subscribe({}, () => {})).rejects.toMatchObject({ replyCode: 404 });
    }
    const again = await broker.queue('q');
    await q.publish('to the new one');
    expect((await viaSession.get())?.bodyString()).toBe('to the new one');
    expect(again.messageCount).toBe(0);
    await session.close();
  });

  it('refuses ifUnused and ifEmpty deletes with 406', async () => {
    await using broker = await Broker.open();
    const q = (await broker.queue('q')) as Queue;
    await q.publish('a');
    const sub = await q.subscribe({ manualAck: true }, () => {});
    await expect(broker.deleteQueue('q', { ifUnused: true })).rejects.toMatchObject({
      replyCode: 406,
      message: "PRECONDITION_FAILED - queue 'q' in vhost '/' in use",
    });
    await sub.close();
    await sub.cancel();
    await expect(broker.deleteQueue('q', { ifEmpty: true })).rejects.toMatchObject({
      replyCode: 406,
      message: "PRECONDITION_FAILED - queue 'q' in vhost '/' not empty",
    });
    expect(broker.queues()).toHaveLength(1);
  });

  it("forgets a queue deleted through its own handle's delete()", async () => {
    await using broker = await Broker.open();
    const fifo = await broker.queue('fifo');
    const stream = await broker.queue('stream', { type: 'stream' });
    await fifo.delete();
    await stream.delete();
    expect(broker.queues()).toEqual([]);
  });
});

describe('a closed broker', () => {
  it('closes idempotently and rejects every later call with MQLITE_CLOSED', async () => {
    const broker = await Broker.open();
    const q = await broker.queue('q');
    await broker.close();
    await broker.close();
    expect(broker.closed).toBe(true);
    await expect(broker.queue('q')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await expect(broker.deleteQueue('q')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await expect(broker.purge('q')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    expect(() => broker.queues()).toThrow(expect.objectContaining({ code: 'MQLITE_CLOSED' }));
    expect(() => broker.session()).toThrow(expect.objectContaining({ code: 'MQLITE_CLOSED' }));
    await expect(q.publish('x')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
  });

  it('rejects acks and nacks of messages delivered before the close', async () => {
    const broker = await Broker.open();
    const q = await broker.queue('q');
    const p = await broker.queue('p', { maxPriority: 3 });
    await q.publish('a');
    await p.publish('b');
    const fromQueue = await q.get({ noAck: false });
    const fromPriority = await p.get({ noAck: false });
    await broker.close();
    await expect(fromQueue?.ack()).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await expect(fromPriority?.nack(true)).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
  });

  it('closes with await using', async () => {
    let outer: Broker;
    {
      await using broker = await Broker.open();
      outer = broker;
    }
    expect(outer.closed).toBe(true);
  });
});

describe('reopening on fs storage', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mqlite-broker-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const open = () => Broker.open({ storage: fsStorage({ dir, fsync: 'never' }) });

  it('brings every durable queue back with its kind, arguments and messages', async () => {
    {
      await using broker = await open();
      await (await broker.queue('fifo', { messageTtl: 60_000 })).publish('f1');
      const prio = await broker.queue('prio', { maxPriority: 5 });
      await prio.publish('low', { priority: 1 });
      await prio.publish('high', { priority: 5 });
      const lvq = await broker.queue('lvq', { lvqKey: 'k' });
      await lvq.publish('v1', { headers: { k: 'a' } });
      await lvq.publish('v2', { headers: { k: 'a' } });
      const stream = await broker.queue('stream', { type: 'stream' });
      await stream.publish('s1');
      await stream.publish('s2');
    }
    await using broker = await open();
    expect(broker.queues().map((q) => [q.name, q.kind, q.messages])).toEqual([
      ['fifo', 'classic', 1],
      ['lvq', 'lvq', 1],
      ['prio', 'priority', 2],
      ['stream', 'stream', 2],
    ]);
    expect(broker.queues().find((q) => q.name === 'fifo')?.arguments).toEqual({
      'x-message-ttl': 60_000,
    });
    const prio = (await broker.queue('prio', { maxPriority: 5 })) as PriorityQueue;
    expect((await prio.get())?.bodyString()).toBe('high');
    const lvq = (await broker.queue('lvq', { lvqKey: 'k' })) as LastValueQueue;
    expect(lvq.latest('a')?.bodyString()).toBe('v2');
    const stream = (await broker.queue('stream', { type: 'stream' })) as StreamQueue;
    const bodies: string[] = [];
    for await (const entry of stream.read('first'))
      bodies.push(Buffer.from(entry.message.body).toString());
    expect(bodies).toEqual(['s1', 's2']);
    // A redeclaration after reopen is checked against the stored declaration.
    await expect(broker.queue('prio', { maxPriority: 6 })).rejects.toMatchObject({
      replyCode: 406,
    });
  });

  it('deletes non-durable and exclusive queues at reopen, as at a broker restart', async () => {
    {
      await using broker = await open();
      await (await broker.queue('transient', { durable: false })).publish('x');
      await broker.queue('mine', { exclusive: true });
      await broker.queue('kept');
    }
    await using broker = await open();
    expect(broker.queues().map((q) => q.name)).toEqual(['kept']);
  });

  it('forgets deleted queues across a reopen', async () => {
    {
      await using broker = await open();
      await broker.queue('a');
      await broker.queue('b');
      await broker.deleteQueue('a');
    }
    await using broker = await open();
    expect(broker.queues().map((q) => q.name)).toEqual(['b']);
  });
});

describe('queue expiry', () => {
  it('deletes an unused x-expires queue from the broker, and a redeclare restarts the countdown', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    await broker.queue('temp', { expires: 1000 });
    clock.advance(600);
    await broker.queue('temp', { expires: 1000 });
    clock.advance(600);
    expect(broker.queues().map((q) => q.name)).toEqual(['temp']);
    clock.advance(500);
    await new Promise((resolve) => setImmediate(resolve));
    expect(broker.queues()).toEqual([]);
  });
});
