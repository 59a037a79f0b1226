import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  AccessRefusedError,
  ClosedError,
  PreconditionFailedError,
  TimeoutError,
} from '../../../src/errors.js';
import type { Message } from '../../../src/message/message.js';
import { collector, drain, publishAll, queuesPerTest, STORAGE_KINDS, settle } from './support.js';

describe.each(STORAGE_KINDS)('consumers of a classic queue on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('pushes messages round-robin among consumers with free prefetch', async () => {
    const q = await queues.fifo('q');
    const a = collector();
    const b = collector();
    await q.subscribe({ tag: 'a' }, a.callback);
    await q.subscribe({ tag: 'b' }, b.callback);
    await publishAll(q, ['1', '2', '3', '4', '5']);
    expect(a.bodies()).toEqual(['1', '3', '5']);
    expect(b.bodies()).toEqual(['2', '4']);
    expect(q.stats().messages).toBe(0);
  });

  it('bounds unacked deliveries by prefetch and continues when one is acked', async () => {
    const q = await queues.fifo('q');
    const a = collector();
    const sub = await q.subscribe({ prefetch: 2, manualAck: true }, a.callback);
    await publishAll(q, ['1', '2', '3', '4']);
    expect(a.bodies()).toEqual(['1', '2']);
    expect(sub.unackedCount).toBe(2);
    expect(q.stats()).toMatchObject({ messagesReady: 2, messagesUnacknowledged: 2 });
    await a.received[0]!.ack();
    expect(a.bodies()).toEqual(['1', '2', '3']);
    await a.received[2]!.ack(true);
    expect(a.bodies()).toEqual(['1', '2', '3', '4']);
    expect(q.stats()).toMatchObject({ messagesReady: 0, messagesUnacknowledged: 1 });
  });

  it('gives a busy consumer nothing and a free one everything (prefetch skips full consumers)', async () => {
    const q = await queues.fifo('q');
    const slow = collector();
    const fast = collector();
    await q.subscribe({ prefetch: 1, manualAck: true }, slow.callback);
    await q.subscribe({ prefetch: 0 }, fast.callback);
    await publishAll(q, ['1', '2', '3']);
    expect(slow.bodies()).toEqual(['1']);
    expect(fast.bodies()).toEqual(['2', '3']);
  });

  it('returns a requeued message to its original position, redelivered, with x-delivery-count', async () => {
    const q = await queues.fifo('q');
    await publishAll(q, ['1', '2', '3']);
    const first = (await q.get({ noAck: false }))!;
    expect(first.redelivered).toBe(false);
    expect(first.properties.headers?.['x-delivery-count']).toBe(0);
    const second = (await q.get({ noAck: false }))!;
    await second.nack(true);
    await first.reject(true);
    const again = (await q.get({ noAck: false }))!;
    expect(again.bodyString()).toBe('1');
    expect(again.redelivered).toBe(true);
    expect(again.properties.headers?.['x-delivery-count']).toBe(1);
    await again.nack(true);
    const third = (await q.get({ noAck: false }))!;
    expect(third.properties.headers?.['x-delivery-count']).toBe(2);
    expect(await drain(q)).toEqual(['2', '3']);
  });

  it('requeues a priority message to its own level ahead of newer ones', async () => {
    const q = await queues.priority('p', 5);
    await publishAll(q, [
      ['h1', { priority: 5 }],
      ['h2', { priority: 5 }],
      ['l1', { priority: 1 }],
    ]);
    const h1 = (await q.get({ noAck: false }))!;
    await q.publish('h3', { priority: 5 });
    await h1.nack(true);
    expect(await drain(q)).toEqual(['h1', 'h2', 'h3', 'l1']);
  });

  it('acks and nacks everything up to a delivery tag with multiple', async () => {
    const q = await queues.fifo('q');
    const c = collector();
    await q.subscribe({ manualAck: true }, c.callback);
    await publishAll(q, ['1', '2', '3', '4']);
    await c.received[1]!.ack(true);
    expect(q.stats()).toMatchObject({ messagesUnacknowledged: 2 });
    await c.received[3]!.nack(true, true);
    await settle();
    expect(c.bodies()).toEqual(['1', '2', '3', '4', '3', '4']);
    expect(c.received[4]!.redelivered).toBe(true);
  });

  it('rejects acking an unknown or already settled tag', async () => {
    const q = await queues.fifo('q');
    await q.publish('1');
    const m = (await q.get({ noAck: false }))!;
    await m.ack();
    await expect(m.ack()).rejects.toThrow(PreconditionFailedError);
    await expect(m.ack()).rejects.toThrow(/unknown delivery tag/);
  });

  it('acks after a callback returns and requeues when it throws', async () => {
    const q = await queues.fifo('q');
    let calls = 0;
    const seen: boolean[] = [];
    await q.subscribe({}, (m: Message) => {
      seen.push(m.redelivered);
      if (calls++ === 0) throw new Error('boom');
    });
    await q.publish('1');
    await settle();
    expect(seen).toEqual([false, true]);
    expect(q.stats().messages).toBe(0);
  });

  it('keeps a cancelled consumer’s unacked messages settleable', async () => {
    const q = await queues.fifo('q');
    const c = collector();
    const sub = await q.subscribe({ manualAck: true }, c.callback);
    await publishAll(q, ['1', '2']);
    await sub.cancel();
    expect(q.consumerCount).toBe(0);
    await publishAll(q, ['3']);
    expect(c.bodies()).toEqual(['1', '2']);
    await c.received[0]!.ack();
    await c.received[1]!.nack(false);
    expect(q.stats()).toMatchObject({ messagesReady: 1, messagesUnacknowledged: 0 });
  });

  it('returns a closed consumer’s unacked messages in original order, redelivered', async () => {
    const q = await queues.fifo('q');
    const c = collector();
    const sub = await q.subscribe({ manualAck: true, prefetch: 3 }, c.callback);
    await publishAll(q, ['1', '2', '3', '4']);
    await sub.close();
    await expect(c.received[0]!.ack()).rejects.toThrow(ClosedError);
    const other = collector();
    await q.subscribe({}, other.callback);
    await settle();
    expect(other.bodies()).toEqual(['1', '2', '3', '4']);
    expect(other.received.map((m) => m.redelivered)).toEqual([true, true, true, false]);
  });

  it('delivers to the single active consumer only, and hands over once what it held is settled', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-single-active-consumer': true } });
    const a = collector();
    const b = collector();
    const subA = await q.subscribe({ prefetch: 1, manualAck: true }, a.callback);
    await q.subscribe({}, b.callback);
    await publishAll(q, ['1', '2', '3']);
    expect(a.bodies()).toEqual(['1']);
    expect(b.bodies()).toEqual([]);
    await subA.cancel();
    await settle();
    expect(b.bodies()).toEqual([]);
    await a.received[0]!.ack();
    await settle();
    expect(b.bodies()).toEqual(['2', '3']);
  });

  it('refuses an exclusive consumer on a single-active-consumer queue', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-single-active-consumer': true } });
    await expect(q.subscribe({ exclusive: true }, () => {})).rejects.toThrow(
      PreconditionFailedError,
    );
  });

  it('lets an exclusive consumer hold the queue alone', async () => {
    const q = await queues.fifo('q');
    const sub = await q.subscribe({ exclusive: true }, () => {});
    await expect(q.subscribe({}, () => {})).rejects.toThrow(AccessRefusedError);
    await sub.cancel();
    const other = await q.subscribe({}, () => {});
    await expect(q.subscribe({ exclusive: true }, () => {})).rejects.toThrow(AccessRefusedError);
    await other.cancel();
  });

  it('serves higher x-priority consumers first while they have room', async () => {
    const q = await queues.fifo('q');
    const low = collector();
    const high = collector();
    await q.subscribe({ args: { 'x-priority': 1 } }, low.callback);
    await q.subscribe({ prefetch: 2, manualAck: true, args: { 'x-priority': 10 } }, high.callback);
    await publishAll(q, ['1', '2', '3', '4']);
    expect(high.bodies()).toEqual(['1', '2']);
    expect(low.bodies()).toEqual(['3', '4']);
    await expect(q.subscribe({ args: { 'x-priority': 'x' } }, () => {})).rejects.toThrow(
      PreconditionFailedError,
    );
  });

  it('refuses a consumer tag already in use on the queue', async () => {
    const q = await queues.fifo('q');
    await q.subscribe({ tag: 't' }, () => {});
    await expect(q.subscribe({ tag: 't' }, () => {})).rejects.toThrow(/already in use/);
  });

  it('pulls with get: no-ack by default, or to be acked, with the remaining message count', async () => {
    const q = await queues.fifo('q');
    expect(await q.get()).toBeNull();
    await publishAll(q, ['1', '2', '3']);
    const auto = (await q.get())!;
    expect(auto.bodyString()).toBe('1');
    expect(auto.messageCount).toBe(2);
    const manual = (await q.get({ noAck: false }))!;
    expect(q.stats()).toMatchObject({ messagesReady: 1, messagesUnacknowledged: 1 });
    await manual.ack();
    expect(q.stats()).toMatchObject({ messagesReady: 1, messagesUnacknowledged: 0 });
  });

  it('consumeOne waits for a message, acks it, and frees its consumer', async () => {
    const q = await queues.fifo('q');
    const waiting = q.consumeOne({ timeout: 1000 });
    expect(q.consumerCount).toBe(1);
    await q.publish('hello');
    const m = await waiting;
    expect(m.bodyString()).toBe('hello');
    expect(q.consumerCount).toBe(0);
    expect(q.stats().messages).toBe(0);
  });

  it('consumeOne rejects with a timeout on the queue clock and leaves later messages alone', async () => {
    const q = await queues.fifo('q');
    const waiting = q.consumeOne({ timeout: 500 });
    queues.clock.advance(499);
    queues.clock.advance(1);
    await expect(waiting).rejects.toThrow(TimeoutError);
    expect(q.consumerCount).toBe(0);
    await q.publish('later');
    expect(q.messageCount).toBe(1);
  });

  it('consumeOne stops waiting when its signal aborts or the queue closes', async () => {
    const q = await queues.fifo('q');
    const controller = new AbortController();
    const waiting = q.consumeOne({ signal: controller.signal });
    controller.abort();
    await expect(waiting).rejects.toThrow(AbortedError);
    expect(q.consumerCount).toBe(0);
    const orphan = q.consumeOne();
    await q.close();
    await expect(orphan).rejects.toThrow(ClosedError);
  });

  it('consumeOne refuses a signal that is not an AbortSignal, and close still succeeds', async () => {
    const q = await queues.fifo('q');
    for (const signal of [{}, 'abort', { aborted: false }]) {
      await expect(q.consumeOne({ signal: signal as AbortSignal })).rejects.toThrow(
        new TypeError('consumeOne() signal must be an AbortSignal'),
      );
    }
    expect(q.consumerCount).toBe(0);
    await q.close();
  });

  it('refuses to settle deliveries once the queue closed', async () => {
    const q = await queues.fifo('q');
    await publishAll(q, ['1', '2']);
    const got = (await q.get({ noAck: false }))!;
    const a = collector();
    await q.subscribe({ manualAck: true }, a.callback);
    await q.close();
    await expect(got.ack()).rejects.toThrow(new ClosedError("queue 'q' is closed"));
    await expect(a.received[0]!.nack(true)).rejects.toThrow(ClosedError);
  });

  it('iterates with an async iterator, acking as the loop advances', async () => {
    const q = await queues.fifo('q');
    await publishAll(q, ['1', '2', '3']);
    const sub = await q.subscribe({ prefetch: 10 });
    const seen: string[] = [];
    for await (const m of sub) {
      seen.push(m.bodyString());
      if (seen.length === 3) break;
    }
    expect(seen).toEqual(['1', '2', '3']);
    await settle();
    // The last message was in hand when the loop broke: it returns to the queue.
    expect(await drain(q)).toEqual(['3']);
  });

  it('reports ready and unacked counts and bytes', async () => {
    const q = await queues.fifo('q');
    await publishAll(q, ['aaaa', 'bb', 'c']);
    await q.get({ noAck: false });
    expect(q.stats()).toEqual({
      messages: 3,
      messagesReady: 2,
      messagesUnacknowledged: 1,
      messageBytes: 7,
      messageBytesReady: 3,
      messageBytesUnacknowledged: 4,
      consumers: 0,
      browsers: 0,
    });
    expect(q.messageCount).toBe(2);
  });

  it('purges ready messages but keeps unacked ones', async () => {
    const q = await queues.priority('p', 3);
    await publishAll(q, ['1', ['2', { priority: 3 }], '3']);
    const held = (await q.get({ noAck: false }))!;
    expect(await q.purge()).toBe(2);
    expect(q.stats()).toMatchObject({ messagesReady: 0, messagesUnacknowledged: 1 });
    await held.nack(true);
    expect(await drain(q)).toEqual(['2']);
    await q.publish('after');
    expect(await drain(q)).toEqual(['after']);
  });

  it('deletes the queue with its messages and cancels its consumers', async () => {
    const q = await queues.fifo('q');
    const sub = await q.subscribe({ prefetch: 1, manualAck: true }, () => {});
    await publishAll(q, ['1', '2']);
    expect(await q.delete()).toBe(1); // the ready one: an unacked message is not counted
    expect(sub.active).toBe(false);
    await expect(q.publish('x')).rejects.toThrow(ClosedError);
    expect(await queues.storage.storage.listNamespaces()).not.toContain('q');
  });
});
