import { expect } from 'vitest';
import { drain, expectAmqpError, publishAll, recorder } from '../helpers.js';
import type { Scenario } from '../types.js';

export const classicScenarios: Scenario[] = [
  {
    name: 'a classic queue delivers in publish order, to get and to a subscriber',
    async run(_session, ctx) {
      const q = await ctx.queue('fifo', { durable: false });
      await publishAll(q, ['a', 'b', 'c']);
      expect(await drain(q)).toEqual(['a', 'b', 'c']);
      expect(await q.get()).toBeNull();
      await publishAll(q, ['d', 'e', 'f']);
      const rec = await recorder(q, { prefetch: 10 });
      await rec.waitFor(3);
      expect(rec.bodies()).toEqual(['d', 'e', 'f']);
      expect(rec.received.map((m) => m.redelivered)).toEqual([false, false, false]);
      await rec.cancel();
    },
  },
  {
    name: 'a message body and properties arrive as published',
    async run(_session, ctx) {
      const q = await ctx.queue('props', { durable: false });
      const timestamp = new Date(Math.floor(Date.now() / 1000) * 1000);
      await q.publish('héllo', {
        contentType: 'text/plain',
        headers: { a: 1, b: 'x', c: true, nested: { k: [1, 'two'] } },
        messageId: 'm-1',
        correlationId: 'c-1',
        type: 't',
        appId: 'app',
        timestamp,
      });
      const msg = await q.get();
      expect(msg?.bodyString()).toBe('héllo');
      expect(msg?.exchange).toBe('');
      expect(msg?.routingKey).toBe(q.name);
      expect(msg?.properties).toMatchObject({
        contentType: 'text/plain',
        headers: { a: 1, b: 'x', c: true, nested: { k: [1, 'two'] } },
        messageId: 'm-1',
        correlationId: 'c-1',
        type: 't',
        appId: 'app',
        timestamp,
      });
    },
  },
  {
    name: 'a nacked message returns to the head of the queue, redelivered',
    async run(_session, ctx) {
      const q = await ctx.queue('requeue', { durable: false });
      await publishAll(q, ['a', 'b']);
      const first = await q.get({ noAck: false });
      expect(first?.bodyString()).toBe('a');
      expect(first?.redelivered).toBe(false);
      await first?.nack(true);
      const again = await q.get({ noAck: false });
      expect(again?.bodyString()).toBe('a');
      expect(again?.redelivered).toBe(true);
      await again?.ack();
      const next = await q.get({ noAck: false });
      expect([next?.bodyString(), next?.redelivered]).toEqual(['b', false]);
      await next?.reject(false);
      expect(await q.get()).toBeNull();
    },
  },
  {
    name: 'after a subscription is cancelled its unacked messages return to the queue, redelivered (on mqlite: once nacked, as cancel leaves them settleable)',
    async run(_session, ctx) {
      const q = await ctx.queue('cancel', { durable: false });
      await publishAll(q, ['a', 'b', 'c']);
      const rec = await recorder(q, { prefetch: 2 }, () => undefined);
      await rec.waitFor(2);
      await rec.cancel();
      if (!ctx.behaviour.cancelRequeuesUnacked) {
        // mqlite's cancel is basic.cancel alone: the unacked stay with the consumer, settleable.
        for (const m of rec.received) await m.nack(true);
      }
      const back = [];
      for (let m = await q.get(); m; m = await q.get()) back.push([m.bodyString(), m.redelivered]);
      expect(back).toEqual([
        ['a', true],
        ['b', true],
        ['c', false],
      ]);
    },
  },
  {
    name: 'consumeOne waits for the next message, and times out when none comes',
    async run(_session, ctx) {
      const q = await ctx.queue('one', { durable: false });
      const waiting = q.consumeOne({ timeout: 2000 });
      await q.publish('x');
      expect((await waiting).bodyString()).toBe('x');
      const late = q.consumeOne({ timeout: 20 });
      await ctx.elapse(20);
      // The client says "consumeOne timed out", mqlite "no message on queue ... within 20 ms".
      await expect(late).rejects.toThrow(/timed out|within 20 ms/);
      expect(await q.get()).toBeNull();
    },
  },
  {
    name: 'a queue name starting with amq. is refused with 403',
    async run(session) {
      await expectAmqpError(
        session.queue(`amq.parity-${Date.now()}`, { durable: false }),
        403,
        /ACCESS_REFUSED - queue name 'amq\.parity-\d+' contains reserved prefix 'amq\.\*'/,
      );
    },
  },
  {
    name: 'a deleted queue is gone: its bindings no longer route',
    async run(session, ctx) {
      const q = await ctx.queue('deleted', { durable: false });
      const ex = await ctx.exchange('deleted-ex', 'fanout', { durable: false });
      await q.bind(ex.name);
      await q.publish('x');
      await q.delete();
      await ctx.expectUnroutable(() => ex.publish('y', { mandatory: true }));
      const again = await session.queue(q.name, { durable: false });
      expect(await again.get()).toBeNull();
    },
  },
];
