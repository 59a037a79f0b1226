import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { eventually, publishAll, recorder } from '../helpers.js';
import type { Scenario } from '../types.js';

export const consumerScenarios: Scenario[] = [
  {
    name: 'prefetch bounds the unacked deliveries of a consumer',
    async run(_session, ctx) {
      const q = await ctx.queue('prefetch', { durable: false });
      await publishAll(q, ['m1', 'm2', 'm3', 'm4', 'm5']);
      const held: AMQPMessage[] = [];
      const rec = await recorder(q, { prefetch: 2 }, (msg) => {
        held.push(msg);
      });
      await rec.waitFor(2);
      // Were a third message pushed to the consumer, get would see m4 rather than m3.
      const polled = await q.get({ noAck: false });
      expect(polled?.bodyString()).toBe('m3');
      await polled?.nack(true);
      expect(rec.bodies()).toEqual(['m1', 'm2']);
      await held[0]?.ack();
      await rec.waitFor(3);
      expect(rec.bodies()).toEqual(['m1', 'm2', 'm3']);
      for (const m of held.slice(1)) await m.ack();
      await rec.waitFor(5);
      for (const m of held.slice(3)) await m.ack();
      expect(rec.bodies()).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
      await rec.cancel();
    },
  },
  {
    name: 'consumers with free prefetch share a queue round-robin',
    async run(_session, ctx) {
      const q = await ctx.queue('round-robin', { durable: false });
      const a = await recorder(q, { prefetch: 10 });
      const b = await recorder(q, { prefetch: 10 });
      await publishAll(q, ['1', '2', '3', '4']);
      await eventually(
        () => a.received.length + b.received.length,
        (n) => n === 4,
        'four deliveries',
      );
      expect([a.bodies(), b.bodies()]).toEqual([
        ['1', '3'],
        ['2', '4'],
      ]);
      await a.cancel();
      await b.cancel();
    },
  },
  {
    name: 'with x-single-active-consumer only the first consumer receives, until it goes',
    async run(_session, ctx) {
      const q = await ctx.queue('sac', {
        durable: false,
        arguments: { 'x-single-active-consumer': true },
      });
      const first = await recorder(q, { prefetch: 10 });
      const second = await recorder(q, { prefetch: 10 });
      await publishAll(q, ['1', '2', '3']);
      await first.waitFor(3);
      await first.cancel();
      await publishAll(q, ['4', '5']);
      await second.waitFor(2);
      expect(first.bodies()).toEqual(['1', '2', '3']);
      expect(second.bodies()).toEqual(['4', '5']);
      await second.cancel();
    },
  },
  {
    name: 'a single active consumer that goes hands its unacked messages to the next one (on mqlite: once released, as cancel leaves them settleable)',
    async run(_session, ctx) {
      const q = await ctx.queue('sac-handover', {
        durable: false,
        arguments: { 'x-single-active-consumer': true },
      });
      const first = await recorder(q, { prefetch: 10 }, () => undefined);
      const second = await recorder(q, { prefetch: 10 });
      await publishAll(q, ['1', '2']);
      await first.waitFor(2);
      expect(second.received).toEqual([]);
      await first.cancel();
      if (!ctx.behaviour.cancelRequeuesUnacked) {
        // On mqlite the cancelled consumer still holds them: releasing them hands them over.
        for (const m of first.received) await m.nack(true);
      }
      await second.waitFor(2);
      expect(second.received.map((m) => [m.bodyString(), m.redelivered])).toEqual([
        ['1', true],
        ['2', true],
      ]);
      await second.cancel();
    },
  },
];
