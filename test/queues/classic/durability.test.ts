import { describe, expect, it } from 'vitest';
import { messageCodec } from '../../../src/message/codec.js';
import { PAGE_SIZE } from '../../../src/queues/classic/packed-log.js';
import { PriorityQueue } from '../../../src/queues/priority-queue.js';
import { drain, publishAll, queuesPerTest, STORAGE_KINDS, settle, TestStorage } from './support.js';

describe.each(STORAGE_KINDS)('a classic queue reopened on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('keeps its messages, in priority order', async () => {
    const q = await queues.priority('jobs', 9);
    await publishAll(q, [
      ['low', { priority: 1 }],
      'none',
      ['high', { priority: 9 }],
      ['mid', { priority: 5 }],
    ]);
    await queues.reopen();
    const again = await queues.priority('jobs', 9);
    expect(again.stats()).toMatchObject({ messagesReady: 4, messageBytesReady: 14 });
    expect(await drain(again)).toEqual(['high', 'mid', 'low', 'none']);
  });

  it('makes delivered but unacked messages ready again, redelivered, and forgets acked ones', async () => {
    const q = await queues.priority('jobs', 3);
    await publishAll(q, ['a', 'b', 'c', ['d', { priority: 3 }]]);
    const d = (await q.get({ noAck: false }))!;
    const a = (await q.get({ noAck: false }))!;
    const b = (await q.get({ noAck: false }))!;
    await a.ack();
    expect(d.bodyString() + b.bodyString()).toBe('db');
    await queues.reopen();
    const again = await queues.priority('jobs', 3);
    const got = [];
    for (let m = await again.get(); m; m = await again.get())
      got.push([m.bodyString(), m.redelivered]);
    expect(got).toEqual([
      ['d', true],
      ['b', true],
      ['c', false],
    ]);
  });

  it('keeps a requeued message redelivered and in its original position', async () => {
    const q = await queues.fifo('q');
    await publishAll(q, ['1', '2']);
    const first = (await q.get({ noAck: false }))!;
    await first.nack(true);
    await queues.reopen();
    const again = await queues.fifo('q');
    const m = (await again.get())!;
    expect([m.bodyString(), m.redelivered]).toEqual(['1', true]);
    expect(m.properties.headers?.['x-delivery-count']).toBe(1);
  });

  it('expires recovered messages by their arrival time', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-message-ttl': 1000 } });
    await q.publish('old');
    queues.clock.advance(600);
    await q.publish('new');
    await queues.reopen();
    queues.clock.advance(500);
    const again = await queues.fifo('q', { arguments: { 'x-message-ttl': 1000 } });
    expect(await drain(again)).toEqual(['new']);
  });

  it('expires recovered messages by their own expiration, at any level', async () => {
    const q = await queues.priority('jobs', 3);
    await publishAll(q, [
      ['short', { priority: 3, expiration: '100' }],
      ['long', { priority: 2, expiration: '10000' }],
      'plain',
    ]);
    await queues.reopen();
    const again = await queues.priority('jobs', 3);
    expect(again.messageCount).toBe(3);
    queues.clock.advance(100);
    expect(again.messageCount).toBe(2);
    expect(await drain(again)).toEqual(['long', 'plain']);
  });

  it('keeps its arguments: reopening with other ones fails with 406', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-max-length': 5 } });
    await q.publish('x');
    await queues.reopen();
    await expect(queues.fifo('q', { arguments: { 'x-max-length': 6 } })).rejects.toThrow(
      "inequivalent arg 'x-max-length' for queue 'q'",
    );
    const again = await queues.fifo('q', { arguments: { 'x-max-length': 5 } });
    expect(again.arguments.maxLength).toBe(5);
    expect(await drain(again)).toEqual(['x']);
  });

  it('does not keep a purged or deleted queue’s messages', async () => {
    const q = await queues.fifo('q');
    await publishAll(q, ['1', '2']);
    await q.purge();
    await q.publish('3');
    await queues.reopen();
    const again = await queues.fifo('q');
    expect(await drain(again)).toEqual(['3']);
    await again.delete();
    queues.byName.delete('q');
    const fresh = await queues.fifo('q');
    expect(fresh.messageCount).toBe(0);
  });

  it('reclaims the segments of fully acked messages', async () => {
    const small = new TestStorage(kind, 2048);
    try {
      const q = await PriorityQueue.open({ name: 'q', maxPriority: 1, storage: small.storage });
      const body = 'x'.repeat(100);
      // Enough for several segments on disk, and several pages of a level kept in memory.
      await Promise.all(Array.from({ length: 3 * PAGE_SIZE }, () => q.publish(body)));
      const log = await (await small.storage.namespace('q')).openLog('prio.000', messageCodec);
      const before = log.segments().length;
      expect(before).toBeGreaterThanOrEqual(3);
      const sub = await q.subscribe({ prefetch: 100 }, () => {});
      await settle();
      await sub.cancel();
      expect(q.stats().messages).toBe(0);
      expect(log.segments().length).toBeLessThanOrEqual(2);
      await q.close();
    } finally {
      await small.dispose();
    }
  });
});
