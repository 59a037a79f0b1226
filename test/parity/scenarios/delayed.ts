import { expect } from 'vitest';
import { drain, eventually, expectAmqpError } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

/**
 * Delayed exchanges, as LavinMQ serves them natively. Delays are a second or so: long enough that
 * a loaded machine does not see a message before it is due, short enough on a live broker;
 * mqlite moves its clock instead.
 */
const only = {
  targets: ['mqlite', 'mqlite-wire', 'lavinmq'],
  reason: 'delayed messages follow LavinMQ; RabbitMQ 3.10 has no delayed-message plugin here',
};

const DELAYED = { 'x-delayed-type': 'direct' } as const;

/** Drains `queue` until it has given `count` messages in all (polled with a deadline). */
async function drainUntil(queue: ParityQueue, count: number, what: string) {
  const got: string[] = [];
  await eventually(
    async () => {
      got.push(...(await drain(queue)));
      return got.length;
    },
    (n) => n >= count,
    what,
  );
  return got;
}

async function delayedExchange(ctx: ParityContext, suffix: string, args: Record<string, unknown>) {
  return ctx.exchange(suffix, 'x-delayed-message' as 'direct', { durable: false, arguments: args });
}

export const delayedScenarios: Scenario[] = [
  {
    name: 'a delayed exchange routes a message once its x-delay has passed, in due order, without x-delay',
    only,
    async run(_session, ctx) {
      const ex = await delayedExchange(ctx, 'delayed', DELAYED);
      const q = await ctx.queue('delayed-q', { durable: false });
      await q.bind(ex.name, 'k');
      await ex.publish('late', { routingKey: 'k', headers: { 'x-delay': 1500, other: 'kept' } });
      await ex.publish('early', { routingKey: 'k', headers: { 'x-delay': 1000 } });
      await ex.publish('now', { routingKey: 'k' });
      expect(await drain(q)).toEqual(['now']);
      await ctx.elapse(1500);
      const got: { body: string | null; headers: unknown }[] = [];
      await eventually(
        async () => {
          for (let m = await q.get({ noAck: true }); m; m = await q.get({ noAck: true })) {
            got.push({ body: m.bodyString(), headers: m.properties.headers });
          }
          return got.length;
        },
        (n) => n >= 2,
        'both delayed messages',
      );
      expect(got.map((m) => m.body)).toEqual(['early', 'late']);
      expect(got[1]?.headers).not.toHaveProperty('x-delay');
      expect(got[1]?.headers).toHaveProperty('other', 'kept');
    },
  },
  {
    name: 'a negative, fractional or non-numeric x-delay is no delay',
    only,
    async run(_session, ctx) {
      const ex = await delayedExchange(ctx, 'delayed-bad', DELAYED);
      const q = await ctx.queue('delayed-bad-q', { durable: false });
      await q.bind(ex.name, 'k');
      for (const delay of [-5000, 2.5, 'soon']) {
        await ex.publish(String(delay), { routingKey: 'k', headers: { 'x-delay': delay } });
      }
      await ctx.elapse(0);
      expect((await drainUntil(q, 3, 'the three messages')).sort()).toEqual(
        ['-5000', '2.5', 'soon'].sort(),
      );
    },
  },
  {
    name: 'a delayed message routes through the bindings and alternate exchange as they stand when due',
    only,
    async run(_session, ctx) {
      const ae = await ctx.exchange('delayed-ae', 'fanout', { durable: false });
      const unrouted = await ctx.queue('delayed-ae-q', { durable: false });
      await unrouted.bind(ae.name);
      const ex = await delayedExchange(ctx, 'delayed-alt', {
        ...DELAYED,
        'alternate-exchange': ae.name,
      });
      const q = await ctx.queue('delayed-alt-q', { durable: false });
      await ex.publish('bound later', { routingKey: 'k', headers: { 'x-delay': 1000 } });
      await ex.publish('never bound', { routingKey: 'z', headers: { 'x-delay': 1000 } });
      await q.bind(ex.name, 'k');
      expect(await drain(unrouted)).toEqual([]);
      await ctx.elapse(1000);
      expect(await drainUntil(q, 1, 'the bound one')).toEqual(['bound later']);
      expect(await drainUntil(unrouted, 1, 'the unrouted one')).toEqual(['never bound']);
    },
  },
  {
    name: 'deleting a delayed exchange drops the messages it holds',
    only,
    async run(_session, ctx) {
      const ex = await delayedExchange(ctx, 'delayed-del', DELAYED);
      await ex.publish('dropped', { routingKey: 'k', headers: { 'x-delay': 500 } });
      await ex.delete();
      const again = await delayedExchange(ctx, 'delayed-del', DELAYED);
      const q = await ctx.queue('delayed-del-q', { durable: false });
      await q.bind(again.name, 'k');
      await again.publish('marker', { routingKey: 'k', headers: { 'x-delay': 800 } });
      await ctx.elapse(800);
      expect(await drainUntil(q, 1, 'the marker')).toEqual(['marker']);
      expect(await drain(q)).toEqual([]);
    },
  },
  {
    name: 'a delayed exchange without x-delayed-type, or with an unknown one, is refused with 406',
    only,
    async run(_session, ctx) {
      await expectAmqpError(
        delayedExchange(ctx, 'delayed-missing', {}),
        406,
        /Missing required argument 'x-delayed-type'/,
      );
      await expectAmqpError(
        delayedExchange(ctx, 'delayed-unknown', { 'x-delayed-type': 'nope' }),
        406,
        /unknown exchange type 'nope'/,
      );
    },
  },
  {
    name: 'x-delayed-exchange: true makes an exchange of any type delayed, the same as x-delayed-message',
    only,
    async run(_session, ctx) {
      const ex = await ctx.exchange('delayed-flag', 'fanout', {
        durable: false,
        arguments: { 'x-delayed-exchange': true },
      });
      const q = await ctx.queue('delayed-flag-q', { durable: false });
      await q.bind(ex.name);
      await ex.publish('held', { headers: { 'x-delay': 1000 } });
      expect(await drain(q)).toEqual([]);
      await ctx.elapse(1000);
      expect(await drainUntil(q, 1, 'the held message')).toEqual(['held']);
      const typed = await delayedExchange(ctx, 'delayed-same', { 'x-delayed-type': 'topic' });
      await expect(
        ctx.exchange('delayed-same', 'topic', {
          durable: false,
          arguments: { 'x-delayed-exchange': true },
        }),
      ).resolves.toMatchObject({ name: typed.name });
    },
  },
  {
    name: 'a mandatory delayed publish is not returned: it is held, and routed through the bindings made meanwhile',
    only,
    async run(_session, ctx) {
      const ex = await delayedExchange(ctx, 'delayed-mandatory', DELAYED);
      await ex.publish('held', { routingKey: 'k', mandatory: true, headers: { 'x-delay': 1000 } });
      await ctx.expectUnroutable(() => ex.publish('now', { routingKey: 'k', mandatory: true }));
      const q = await ctx.queue('delayed-mandatory-q', { durable: false });
      await q.bind(ex.name, 'k');
      await ctx.elapse(1000);
      expect(await drainUntil(q, 1, 'the held message')).toEqual(['held']);
    },
  },
  {
    name: 'an x-delay past 2^32-1 ms is no delay',
    only,
    async run(_session, ctx) {
      const ex = await delayedExchange(ctx, 'delayed-huge', DELAYED);
      const q = await ctx.queue('delayed-huge-q', { durable: false });
      await q.bind(ex.name, 'k');
      for (const delay of [2 ** 32, 2 ** 40]) {
        await ex.publish(String(delay), { routingKey: 'k', headers: { 'x-delay': delay } });
      }
      await ctx.elapse(0);
      expect((await drainUntil(q, 2, 'both messages')).sort()).toEqual(
        [String(2 ** 32), String(2 ** 40)].sort(),
      );
    },
  },
];
