import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { eventually, publishAll } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';
import { deadLettered } from './max-length.js';

/**
 * The whole second the suite began in: no x-death time of a scenario is older. A bound taken in
 * the scenario would not hold for mqlite on a manual clock, which starts when its session opens:
 * on a loaded machine, seconds before the scenario's first publish.
 */
const SUITE_STARTED = Math.floor(Date.now() / 1000) * 1000;

/**
 * Waits until a `get` on `q` returns a message (dead-lettering is asynchronous on a broker). With
 * `noAck: false` the caller settles it.
 */
function arrival(q: ParityQueue, what: string, noAck = true): Promise<AMQPMessage> {
  return eventually(
    () => q.get({ noAck }),
    (m) => m !== null,
    what,
  ) as Promise<AMQPMessage>;
}

/** An `x-death` entry as RabbitMQ 3.10 writes it (`time` is a whole-second timestamp). */
function death(
  queue: string,
  reason: string,
  count: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    count,
    reason,
    queue,
    time: expect.any(Date),
    exchange: '',
    'routing-keys': [queue],
    ...extra,
  };
}

/** The `x-delivery-count` header of a first delivery, on targets that write it. */
function firstDelivery(ctx: ParityContext): Record<string, unknown> {
  return ctx.behaviour.deliveryCountHeader ? { 'x-delivery-count': 0 } : {};
}

export const deadLetterScenarios: Scenario[] = [
  {
    name: 'an expired message is dead-lettered with x-death, original-expiration kept, expiration removed',
    async run(_session, ctx) {
      const dlq = await ctx.queue('ttl-dlq', { durable: false });
      const q = await ctx.queue('ttl', {
        durable: false,
        arguments: {
          'x-message-ttl': 60,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': dlq.name,
        },
      });
      await q.publish('short', { expiration: '20', headers: { h: 1 }, priority: 3 });
      await q.publish('queue-ttl');
      await ctx.elapse(60);
      const first = await arrival(dlq, 'the first dead-lettered message');
      const second = await arrival(dlq, 'the second dead-lettered message');
      expect(first.bodyString()).toBe('short');
      expect(first.exchange).toBe('');
      expect(first.routingKey).toBe(dlq.name);
      expect(first.properties.expiration).toBeUndefined();
      expect(first.properties.priority).toBe(3);
      expect(first.properties.headers).toEqual({
        ...firstDelivery(ctx),
        h: 1,
        'x-death': [death(q.name, 'expired', 1, { 'original-expiration': '20' })],
        'x-first-death-exchange': '',
        'x-first-death-queue': q.name,
        'x-first-death-reason': 'expired',
      });
      const deaths = first.properties.headers?.['x-death'] as { time: Date }[] | undefined;
      const time = deaths?.[0]?.time.getTime() ?? Number.NaN;
      expect(time).toBeGreaterThanOrEqual(SUITE_STARTED);
      expect(time).toBeLessThanOrEqual(Date.now() + 60_000);
      expect(time % 1000).toBe(0);
      expect(second.bodyString()).toBe('queue-ttl');
      expect(second.properties.headers).toEqual({
        ...firstDelivery(ctx),
        'x-death': [death(q.name, 'expired', 1)],
        'x-first-death-exchange': '',
        'x-first-death-queue': q.name,
        'x-first-death-reason': 'expired',
      });
    },
  },
  {
    name: 'the lower of queue TTL and message expiration applies, and an expired message is never delivered',
    async run(_session, ctx) {
      const q = await ctx.queue('ttl-min', { durable: false, arguments: { 'x-message-ttl': 60 } });
      await q.publish('long-expiration', { expiration: '100000' });
      await q.publish('no-expiration');
      const keep = await ctx.queue('ttl-keep', { durable: false });
      await keep.publish('kept', { expiration: '100000' });
      await ctx.elapse(60);
      await eventually(
        () => q.get(),
        (m) => m === null,
        'the queue to have dropped its expired messages',
      );
      const kept = await keep.get();
      expect(kept?.bodyString()).toBe('kept');
      expect(kept?.properties.expiration).toBe('100000');
    },
  },
  {
    name: 'a rejected message is dead-lettered, and each death of a rejection cycle updates x-death, newest first',
    async run(_session, ctx) {
      const a = ctx.name('cycle-a');
      const b = ctx.name('cycle-b');
      const qa = await ctx.queue('cycle-a', {
        durable: false,
        arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': b },
      });
      const qb = await ctx.queue('cycle-b', {
        durable: false,
        arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': a },
      });
      await qa.publish('ping', { expiration: '100000' });
      await (await qa.get({ noAck: false }))?.reject(false);
      const inB = await arrival(qb, 'the message dead-lettered to b', false);
      expect(inB.properties.headers?.['x-death']).toEqual([
        death(a, 'rejected', 1, { 'original-expiration': '100000' }),
      ]);
      expect(inB.properties.expiration).toBeUndefined();
      await inB.reject(false);
      const backInA = await arrival(qa, 'the message dead-lettered back to a', false);
      expect(backInA.properties.headers?.['x-death']).toEqual([
        death(b, 'rejected', 1),
        death(a, 'rejected', 1, { 'original-expiration': '100000' }),
      ]);
      await backInA.reject(false);
      const final = await arrival(qb, 'the message dead-lettered to b again');
      expect(final.properties.headers).toEqual({
        ...firstDelivery(ctx),
        'x-death': [
          death(a, 'rejected', 2, { 'original-expiration': '100000' }),
          death(b, 'rejected', 1),
        ],
        'x-first-death-exchange': '',
        'x-first-death-queue': a,
        'x-first-death-reason': 'rejected',
      });
    },
  },
  {
    name: 'dead-lettering to a missing queue drops the message silently',
    async run(_session, ctx) {
      const q = await ctx.queue('dl-nowhere', {
        durable: false,
        arguments: {
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': ctx.name('does-not-exist'),
        },
      });
      await q.publish('x');
      await (await q.get({ noAck: false }))?.reject(false);
      expect(await q.get()).toBeNull();
    },
  },
  {
    name: 'dead-lettering routes through a named exchange with the original routing key',
    async run(_session, ctx) {
      const dlx = await ctx.exchange('dlx', 'topic', { durable: false });
      const dlq = await ctx.queue('dlx-q', { durable: false });
      const q = await ctx.queue('dlx-src', {
        durable: false,
        arguments: { 'x-dead-letter-exchange': dlx.name },
      });
      await dlq.bind(dlx.name, `${q.name}.#`);
      await dlq.bind(dlx.name, q.name);
      await q.publish('x');
      await (await q.get({ noAck: false }))?.nack(false);
      const msg = await arrival(dlq, 'the message dead-lettered through the exchange');
      expect([msg.exchange, msg.routingKey]).toEqual([dlx.name, q.name]);
      expect(msg.properties.headers?.['x-death']).toEqual([{ ...death(q.name, 'rejected', 1) }]);
      expect(msg.properties.headers?.['x-first-death-exchange']).toBe('');
    },
  },
  {
    name: 'a message rejected after its queue was deleted is not dead-lettered',
    async run(_session, ctx) {
      const dlq = await ctx.queue('gone-dlq', { durable: false });
      const dl = { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq.name };
      const q = await ctx.queue('gone', { durable: false, arguments: dl });
      const marker = await ctx.queue('gone-marker', { durable: false, arguments: dl });
      await q.publish('m1');
      await marker.publish('marker');
      const held = await q.get({ noAck: false });
      const mark = await marker.get({ noAck: false });
      await q.delete();
      await held?.nack(false);
      await mark?.nack(false);
      const first = await arrival(dlq, 'the marker dead-lettered');
      expect(first.bodyString()).toBe('marker');
      expect(await dlq.get()).toBeNull();
    },
  },
  {
    name: 'messages that expire at the same moment are dead-lettered in queue order (x-message-ttl and expiration)',
    async run(_session, ctx) {
      const dlq = await ctx.queue('same-moment-dlq', { durable: false });
      const toDlq = { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq.name };
      const byTtl = await ctx.queue('same-moment-ttl', {
        durable: false,
        arguments: { ...toDlq, 'x-message-ttl': 50 },
      });
      const byExpiration = await ctx.queue('same-moment-exp', { durable: false, arguments: toDlq });
      const bodies = ['m0', 'm1', 'm2', 'm3', 'm4'];
      await publishAll(byTtl, bodies);
      await ctx.elapse(50);
      expect(await deadLettered(ctx, dlq, 5)).toEqual(bodies.map((b) => [b, 'expired']));
      await publishAll(byExpiration, bodies, { expiration: '50' });
      await ctx.elapse(50);
      expect(await deadLettered(ctx, dlq, 5)).toEqual(bodies.map((b) => [b, 'expired']));
    },
  },
  {
    name: 'messages of a priority queue that expire at the same moment are dead-lettered highest priority first',
    async run(_session, ctx) {
      const dlq = await ctx.queue('same-moment-prio-dlq', { durable: false });
      const q = await ctx.queue('same-moment-prio', {
        durable: false,
        arguments: {
          'x-max-priority': 2,
          'x-message-ttl': 50,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': dlq.name,
        },
      });
      for (const [body, priority] of [
        ['low0', 0],
        ['high0', 2],
        ['low1', 0],
        ['mid0', 1],
        ['high1', 2],
      ] as const) {
        await q.publish(body, { priority });
      }
      await ctx.elapse(50);
      expect((await deadLettered(ctx, dlq, 5)).map(([body]) => body)).toEqual([
        'high0',
        'high1',
        'mid0',
        'low0',
        'low1',
      ]);
    },
  },
];
