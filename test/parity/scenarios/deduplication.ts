import { expect } from 'vitest';
import { drain, expectAmqpError } from '../helpers.js';
import type { Scenario } from '../types.js';

const LAVINMQ = {
  targets: ['mqlite', 'mqlite-wire', 'lavinmq'],
  reason: 'LavinMQ’s deduplication (RabbitMQ needs a community plugin)',
};
const DEDUP = { 'x-message-deduplication': true };
const id = (value: string, extra: Record<string, unknown> = {}) => ({
  headers: { 'x-deduplication-header': value, ...extra },
});

export const deduplicationScenarios: Scenario[] = [
  {
    name: 'a deduplicating exchange routes a message whose id it has seen nowhere (returned when mandatory)',
    only: LAVINMQ,
    async run(_session, ctx) {
      const ex = await ctx.exchange('dedup', 'fanout', { durable: false, arguments: DEDUP });
      const q = await ctx.queue('dedup-q', { durable: false });
      await q.bind(ex.name);
      await ex.publish('first', id('o1'));
      await ex.publish('again', id('o1'));
      await ctx.expectUnroutable(() => ex.publish('mandatory', { ...id('o1'), mandatory: true }));
      await ex.publish('other', id('o2'));
      await ex.publish('no id');
      await ex.publish('no id again');
      expect(await drain(q)).toEqual(['first', 'other', 'no id', 'no id again']);
    },
  },
  {
    name: 'a deduplicating queue does not store a message whose id it has seen',
    only: LAVINMQ,
    async run(_session, ctx) {
      const ex = await ctx.exchange('dedup', 'fanout', { durable: false });
      const dedup = await ctx.queue('dedup-q', { durable: false, arguments: DEDUP });
      const plain = await ctx.queue('plain-q', { durable: false });
      await dedup.bind(ex.name);
      await plain.bind(ex.name);
      await ex.publish('first', id('o1'));
      await ex.publish('again', id('o1'));
      await dedup.publish('direct', id('o1'));
      await ctx.expectUnroutable(() =>
        ex
          .publish('only target', { ...id('o9'), mandatory: true })
          .then(() => dedup.publish('dup', { ...id('o9'), mandatory: true })),
      );
      expect(await drain(dedup)).toEqual(['first', 'only target']);
      expect(await drain(plain)).toEqual(['first', 'again', 'only target']);
    },
  },
  {
    name: 'deduplication keeps x-cache-size ids, the oldest going first, in the header x-deduplication-header names',
    only: LAVINMQ,
    async run(_session, ctx) {
      const q = await ctx.queue('dedup-q', {
        durable: false,
        arguments: { ...DEDUP, 'x-cache-size': 2, 'x-deduplication-header': 'order' },
      });
      for (const order of ['a', 'b', 'c', 'a', 'c']) await q.publish(order, { headers: { order } });
      await q.publish('a by the default header', id('a'));
      expect(await drain(q)).toEqual(['a', 'b', 'c', 'a', 'a by the default header']);
    },
  },
  {
    name: 'a deduplicated id is forgotten after x-cache-ttl, or the message’s own x-cache-ttl',
    only: LAVINMQ,
    async run(_session, ctx) {
      const q = await ctx.queue('dedup-q', {
        durable: false,
        arguments: { ...DEDUP, 'x-cache-ttl': 300 },
      });
      await q.publish('a1', id('a'));
      await q.publish('b1', id('b', { 'x-cache-ttl': 600_000 }));
      await q.publish('a2', id('a'));
      await ctx.elapse(1500);
      await q.publish('a3', id('a'));
      await q.publish('b2', id('b'));
      expect(await drain(q)).toEqual(['a1', 'b1', 'a3']);
    },
  },
  {
    name: 'deduplication arguments are checked: a wrong type, or other ones on a redeclare, is 406',
    only: LAVINMQ,
    async run(_session, ctx) {
      await expectAmqpError(
        ctx.queue('bad-q', { durable: false, arguments: { ...DEDUP, 'x-cache-size': 'big' } }),
        406,
        'PRECONDITION_FAILED - x-cache-size header not an integer',
      );
      await expectAmqpError(
        ctx.queue('bad-q2', { durable: false, arguments: { 'x-message-deduplication': 'yes' } }),
        406,
        'PRECONDITION_FAILED - x-message-deduplication header not a boolean',
      );
      const args = { ...DEDUP, 'x-cache-size': 2 };
      const ex = await ctx.exchange('dedup', 'direct', { durable: false, arguments: args });
      const q = await ctx.queue('dedup-q', { durable: false, arguments: args });
      // A session reuses what it declared: redeclare on another connection.
      const other = await ctx.connection();
      await expectAmqpError(
        other.exchange(ex.name, 'direct', {
          durable: false,
          arguments: { ...args, 'x-cache-size': 3 },
        }),
        406,
        `PRECONDITION_FAILED - Existing exchange '${ex.name}' declared with other arguments`,
      );
      const again = await ctx.connection();
      await expectAmqpError(
        again.queue(q.name, { durable: false, arguments: { ...args, 'x-cache-size': 3 } }),
        406,
      );
    },
  },
];
