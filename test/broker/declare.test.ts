import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { LastValueQueue } from '../../src/queues/lvq/last-value-queue.js';
import { PriorityQueue, Queue } from '../../src/queues/priority-queue.js';
import { StreamQueue } from '../../src/queues/stream/stream-queue.js';

describe('declaring queues by AMQP arguments', () => {
  it('makes a FIFO queue when no argument chooses a kind', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('tasks');
    expect(q).toBeInstanceOf(Queue);
    expect(q.name).toBe('tasks');
    await q.publish('a');
    await q.publish('b');
    expect((await (q as Queue).get())?.bodyString()).toBe('a');
  });

  it("accepts x-queue-type 'classic' as the plain queue", async () => {
    await using broker = await Broker.open();
    expect(await broker.queue('q', { arguments: { 'x-queue-type': 'classic' } })).toBeInstanceOf(
      Queue,
    );
    // Declared without the argument, the same queue: classic is the default type.
    expect(await broker.queue('q')).toBeInstanceOf(Queue);
  });

  it('makes a priority queue from x-max-priority', async () => {
    await using broker = await Broker.open();
    const q = (await broker.queue('jobs', { arguments: { 'x-max-priority': 9 } })) as PriorityQueue;
    expect(q).toBeInstanceOf(PriorityQueue);
    expect(q.maxPriority).toBe(9);
    await q.publish('low', { priority: 1 });
    await q.publish('high', { priority: 9 });
    expect((await q.get())?.bodyString()).toBe('high');
  });

  it("makes a stream from x-queue-type 'stream'", async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('events', { arguments: { 'x-queue-type': 'stream' } });
    expect(q).toBeInstanceOf(StreamQueue);
  });

  it('makes a last-value queue from qpid.last_value_queue with the qpid.LVQ_key header', async () => {
    await using broker = await Broker.open();
    const q = (await broker.queue('prices', {
      arguments: { 'qpid.last_value_queue': true },
    })) as LastValueQueue;
    expect(q).toBeInstanceOf(LastValueQueue);
    expect(q.key).toBe('qpid.LVQ_key');
    await q.publish('1', { headers: { 'qpid.LVQ_key': 'ACME' } });
    await q.publish('2', { headers: { 'qpid.LVQ_key': 'ACME' } });
    expect(q.messageCount).toBe(1);
  });

  it('makes a last-value queue keyed by qpid.last_value_queue_key', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('prices', { arguments: { 'qpid.last_value_queue_key': 'ISIN' } });
    expect(q).toBeInstanceOf(LastValueQueue);
    expect((q as LastValueQueue).key).toBe('ISIN');
  });

  it('makes an LVQ, not a priority queue, when both LVQ and priority arguments are given', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('prices', {
      arguments: { 'qpid.last_value_queue': true, 'x-max-priority': 5 },
    });
    expect(q).toBeInstanceOf(LastValueQueue);
  });

  it('takes camelCase sugar beside the arguments', async () => {
    await using broker = await Broker.open();
    expect(await broker.queue('p', { maxPriority: 3 })).toBeInstanceOf(PriorityQueue);
    expect(await broker.queue('s', { type: 'stream', maxAge: '7D' })).toBeInstanceOf(StreamQueue);
    const lvq = await broker.queue('l', { lvqKey: 'ISIN' });
    expect((lvq as LastValueQueue).key).toBe('ISIN');
    expect(await broker.queue('l2', { lvq: true })).toBeInstanceOf(LastValueQueue);
    // The same value in both places is fine.
    expect(
      await broker.queue('p2', { maxPriority: 3, arguments: { 'x-max-priority': 3 } }),
    ).toBeInstanceOf(PriorityQueue);
    const listed = broker.queues().find((q) => q.name === 's');
    expect(listed?.arguments).toEqual({ 'x-queue-type': 'stream', 'x-max-age': '7D' });
  });

  it('refuses sugar that contradicts the arguments with a TypeError', async () => {
    await using broker = await Broker.open();
    await expect(
      broker.queue('p', { maxPriority: 3, arguments: { 'x-max-priority': 5 } }),
    ).rejects.toThrow(
      new TypeError("option 'maxPriority' (3) and arguments['x-max-priority'] (5) differ"),
    );
    await expect(broker.queue('p', { maxPriority: '3' as unknown as number })).rejects.toThrow(
      new TypeError("option 'maxPriority' must be a number, got string"),
    );
    await expect(
      broker.queue('p', { maxPriorty: 3 } as unknown as { maxPriority: number }),
    ).rejects.toThrow(new TypeError("unknown queue option 'maxPriorty'"));
    expect(broker.queues()).toEqual([]);
  });

  it('refuses unknown queue types with 406', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('q', { arguments: { 'x-queue-type': 'foo' } })).rejects.toMatchObject(
      {
        code: 'MQLITE_PRECONDITION_FAILED',
        replyCode: 406,
        message:
          "PRECONDITION_FAILED - invalid arg 'x-queue-type' for queue 'q' in vhost '/': must be 'classic', 'quorum' or 'stream', got 'foo'",
      },
    );
    expect(broker.queues()).toEqual([]);
  });

  it('defaults flags as @cloudamqp/amqp-client declares them', async () => {
    await using broker = await Broker.open();
    await broker.queue('named');
    const generated = await broker.queue('');
    expect(generated.name).toMatch(/^amq\.gen-[A-Za-z0-9_-]{22}$/);
    const [info] = broker.queues().filter((q) => q.name === 'named');
    expect(info).toMatchObject({ durable: true, exclusive: false, autoDelete: false });
    const [gen] = broker.queues().filter((q) => q.name === generated.name);
    expect(gen).toMatchObject({ durable: false, exclusive: true, autoDelete: true });
  });

  it('finds an existing queue with passive, and fails with 404 when there is none', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('here', { maxPriority: 2 });
    expect(await broker.queue('here', { passive: true })).toBe(q);
    await expect(broker.queue('missing', { passive: true })).rejects.toMatchObject({
      code: 'MQLITE_NOT_FOUND',
      replyCode: 404,
      message: "NOT_FOUND - no queue 'missing' in vhost '/'",
    });
  });

  it('gives concurrent declarations of one name the same queue', async () => {
    await using broker = await Broker.open();
    const [a, b, c] = await Promise.all([
      broker.queue('q'),
      broker.queue('q'),
      broker.queue('q', { passive: true }),
    ]);
    expect(b).toBe(a);
    expect(c).toBe(a);
  });

  it('returns handles whose common methods need no cast', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('q');
    const bodies: string[] = [];
    const sub = await q.subscribe({ prefetch: 1 }, (m) => {
      bodies.push(m.bodyString());
    });
    await q.publish('hello');
    expect(bodies).toEqual(['hello']);
    await sub.cancel();
  });
});
