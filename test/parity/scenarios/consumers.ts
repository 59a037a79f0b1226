import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { eventually, holder, publishAll, recorder, settled } from '../helpers.js';
import type { ParityQueue, Scenario } from '../types.js';

/** Named consumers that hold what they receive, logging `name:body` in delivery order. */
function rotationLog(q: ParityQueue) {
  const log: string[] = [];
  const held = new Map<string, AMQPMessage[]>();
  const consumer = async (name: string, prefetch: number) => {
    held.set(name, []);
    return recorder(q, { prefetch }, (m) => {
      log.push(`${name}:${m.bodyString()}`);
      held.get(name)?.push(m);
    });
  };
  const deliveries = (n: number) =>
    eventually(
      () => log.length,
      (len) => len >= n,
      `${n} deliveries`,
    );
  return { log, held, consumer, deliveries };
}

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
  {
    // amqp-client's stop() sends basic.cancel for each consumer before it closes the connection.
    name: 'a single active consumer whose connection goes hands its unacked message over first, then newer ones',
    async run(_session, ctx) {
      const q = await ctx.queue('sac-connection', {
        durable: false,
        arguments: { 'x-single-active-consumer': true },
      });
      const first = await holder(ctx, q, 1);
      const second = await recorder(q, { prefetch: 1 });
      await publishAll(q, ['m1', 'm2']);
      await first.waitFor(1);
      await first.stop();
      await second.waitFor(2);
      expect(second.received.map((m) => [m.bodyString(), m.redelivered])).toEqual([
        ['m1', true],
        ['m2', false],
      ]);
      await second.cancel();
    },
  },
  {
    name: 'round-robin goes on from the consumer after the last served; a consumer found full rejoins at the back once it has room',
    async run(_session, ctx) {
      const q = await ctx.queue('rotation', { durable: false });
      const { log, held, consumer, deliveries } = rotationLog(q);
      const consumers = [
        await consumer('c1', 1),
        await consumer('c2', 1),
        await consumer('c3', 10),
      ];
      let n = 0;
      for (const body of ['m1', 'm2', 'm3', 'm4']) {
        await q.publish(body);
        await deliveries(++n);
      }
      // m4 found c1 and c2 full: they rejoin the rotation behind c3, c2 first as it acks first.
      for (const name of ['c2', 'c1']) {
        const msg = held.get(name)?.shift();
        await msg?.ack();
        if (msg) await settled(msg);
      }
      for (const body of ['m5', 'm6', 'm7']) {
        await q.publish(body);
        await deliveries(++n);
      }
      expect(log).toEqual(['c1:m1', 'c2:m2', 'c3:m3', 'c3:m4', 'c3:m5', 'c2:m6', 'c1:m7']);
      for (const c of consumers) await c.cancel();
    },
  },
  {
    name: 'a message requeued by a full consumer goes to the next in the rotation, not back to it',
    async run(_session, ctx) {
      const q = await ctx.queue('rotation-requeue', { durable: false });
      const { log, held, consumer, deliveries } = rotationLog(q);
      const c1 = await consumer('c1', 1);
      const c2 = await consumer('c2', 1);
      await publishAll(q, ['m1', 'm2']);
      await deliveries(2);
      const c3 = await consumer('c3', 3);
      await q.publish('m3');
      await deliveries(3);
      await held.get('c2')?.shift()?.nack(true);
      await deliveries(4);
      expect(log).toEqual(['c1:m1', 'c2:m2', 'c3:m3', 'c3:m2']);
      for (const c of [c1, c2, c3]) await c.cancel();
    },
  },
];
