import { expect } from 'vitest';
import { drain, expectAmqpError } from '../helpers.js';
import type {
  ExchangeType,
  ParityContext,
  ParityExchange,
  ParityQueue,
  Scenario,
} from '../types.js';

/**
 * Binds one queue per binding to `exchange`, publishes one message per case (its body is the
 * case's name) and returns, per binding, the cases it received.
 */
async function routingTable(
  ctx: ParityContext,
  exchange: ParityExchange,
  bindings: Record<string, { key?: string; args?: Record<string, unknown> }>,
  cases: Record<
    string,
    { key?: string; headers?: Record<string, string | number | boolean | null> }
  >,
): Promise<Record<string, string[]>> {
  const queues: [string, ParityQueue][] = [];
  let i = 0;
  for (const [name, b] of Object.entries(bindings)) {
    const q = await ctx.queue(`${exchange.name.slice(-12)}-b${i++}`, { durable: false });
    await q.bind(exchange.name, b.key ?? '', b.args ?? {});
    queues.push([name, q]);
  }
  for (const [name, c] of Object.entries(cases)) {
    const routingKey = c.key ?? '';
    await exchange.publish(name, c.headers ? { routingKey, headers: c.headers } : { routingKey });
  }
  const table: Record<string, string[]> = {};
  for (const [name, q] of queues) table[name] = await drain(q);
  return table;
}

export const exchangeScenarios: Scenario[] = [
  {
    name: 'a direct exchange routes by exact routing key',
    async run(_session, ctx) {
      const ex = await ctx.exchange('direct', 'direct', { durable: false });
      const table = await routingTable(
        ctx,
        ex,
        { info: { key: 'info' }, error: { key: 'error' }, empty: { key: '' } },
        {
          'info-1': { key: 'info' },
          'error-1': { key: 'error' },
          'debug-1': { key: 'debug' },
          blank: {},
        },
      );
      expect(table).toEqual({ info: ['info-1'], error: ['error-1'], empty: ['blank'] });
    },
  },
  {
    name: 'a fanout exchange routes every message to every bound queue',
    async run(_session, ctx) {
      const ex = await ctx.exchange('fanout', 'fanout', { durable: false });
      const table = await routingTable(
        ctx,
        ex,
        { q1: { key: 'x' }, q2: {} },
        { m1: { key: 'a' }, m2: {} },
      );
      expect(table).toEqual({ q1: ['m1', 'm2'], q2: ['m1', 'm2'] });
    },
  },
  {
    name: 'a topic exchange matches * as one word and # as zero or more, empty words included',
    async run(_session, ctx) {
      const ex = await ctx.exchange('topic', 'topic', { durable: false });
      const patterns = ['#', '*', 'a.#.b', 'a.*', '', '*.*', 'a.#', '#.b', 'a.*.#'];
      const keys = ['', 'a', 'a.b', 'a.x.b', 'a.', '.', 'a..b', 'b'];
      const table = await routingTable(
        ctx,
        ex,
        Object.fromEntries(patterns.map((p) => [`pattern[${p}]`, { key: p }])),
        Object.fromEntries(keys.map((k) => [`key[${k}]`, { key: k }])),
      );
      expect(table).toEqual({
        'pattern[#]': keys.map((k) => `key[${k}]`),
        'pattern[*]': ['key[a]', 'key[b]'],
        'pattern[a.#.b]': ['key[a.b]', 'key[a.x.b]', 'key[a..b]'],
        'pattern[a.*]': ['key[a.b]', 'key[a.]'],
        'pattern[]': ['key[]'],
        'pattern[*.*]': ['key[a.b]', 'key[a.]', 'key[.]'],
        'pattern[a.#]': ['key[a]', 'key[a.b]', 'key[a.x.b]', 'key[a.]', 'key[a..b]'],
        'pattern[#.b]': ['key[a.b]', 'key[a.x.b]', 'key[a..b]', 'key[b]'],
        'pattern[a.*.#]': ['key[a.b]', 'key[a.x.b]', 'key[a.]', 'key[a..b]'],
      });
    },
  },
  {
    name: 'a headers exchange matches x-match all, any, all-with-x and any-with-x as RabbitMQ does',
    async run(_session, ctx) {
      const ex = await ctx.exchange('headers', 'headers', { durable: false });
      const table = await routingTable(
        ctx,
        ex,
        {
          allEmpty: { args: {} },
          anyEmpty: { args: { 'x-match': 'any' } },
          allA1: { args: { a: 1 } },
          anyA1B2: { args: { 'x-match': 'any', a: 1, b: 2 } },
          allIgnoresX: { args: { 'x-match': 'all', 'x-foo': 'y', a: 1 } },
          allWithX: { args: { 'x-match': 'all-with-x', 'x-foo': 'y', a: 1 } },
          anyWithX: { args: { 'x-match': 'any-with-x', 'x-foo': 'y' } },
          allString1: { args: { a: '1' } },
          presenceA: { args: { a: null } },
          allTrue: { args: { t: true } },
        },
        {
          none: {},
          a1: { headers: { a: 1 } },
          aString1: { headers: { a: '1' } },
          b2: { headers: { b: 2 } },
          xfoo: { headers: { 'x-foo': 'y' } },
          xfooA1: { headers: { 'x-foo': 'y', a: 1 } },
          aNull: { headers: { a: null } },
          tTrue: { headers: { t: true } },
          t1: { headers: { t: 1 } },
        },
      );
      expect(table).toEqual({
        allEmpty: ['none', 'a1', 'aString1', 'b2', 'xfoo', 'xfooA1', 'aNull', 'tTrue', 't1'],
        anyEmpty: [],
        allA1: ['a1', 'xfooA1'],
        anyA1B2: ['a1', 'b2', 'xfooA1'],
        allIgnoresX: ['a1', 'xfooA1'],
        allWithX: ['xfooA1'],
        anyWithX: ['xfoo', 'xfooA1'],
        allString1: ['aString1'],
        presenceA: ['a1', 'aString1', 'xfooA1', 'aNull'],
        allTrue: ['tTrue'],
      });
    },
  },
  {
    name: 'an invalid x-match is refused with 406',
    async run(_session, ctx) {
      const q = await ctx.queue('bad-x-match', { durable: false });
      await expectAmqpError(
        q.bind('amq.headers', '', { 'x-match': 'most' }),
        406,
        /PRECONDITION_FAILED - Invalid x-match field value .*most.*; expected all, any, all-with-x, or any-with-x/,
      );
    },
  },
  {
    name: 'an unbound queue stops receiving; binding twice is one binding',
    async run(_session, ctx) {
      const ex = await ctx.exchange('unbind', 'direct', { durable: false });
      const q = await ctx.queue('unbind-q', { durable: false });
      await q.bind(ex.name, 'k');
      await q.bind(ex.name, 'k');
      await ex.publish('1', { routingKey: 'k' });
      await q.unbind(ex.name, 'k');
      await q.unbind(ex.name, 'never-bound');
      await ex.publish('2', { routingKey: 'k' });
      expect(await drain(q)).toEqual(['1']);
    },
  },
  {
    name: 'an exchange routes unmatched messages to its alternate-exchange',
    async run(_session, ctx) {
      const ae = await ctx.exchange('ae', 'fanout', { durable: false });
      const ex = await ctx.exchange('with-ae', 'direct', {
        durable: false,
        arguments: { 'alternate-exchange': ae.name },
      });
      const routed = await ctx.queue('ae-routed', { durable: false });
      const unrouted = await ctx.queue('ae-unrouted', { durable: false });
      await routed.bind(ex.name, 'known');
      await unrouted.bind(ae.name);
      await ex.publish('hit', { routingKey: 'known' });
      await ex.publish('miss', { routingKey: 'unknown' });
      expect(await drain(routed)).toEqual(['hit']);
      const [missed] = [await unrouted.get()];
      expect([missed?.bodyString(), missed?.exchange, missed?.routingKey]).toEqual([
        'miss',
        ex.name,
        'unknown',
      ]);
    },
  },
  {
    name: 'alternate-exchange cycles end without routing',
    async run(_session, ctx) {
      const a = ctx.name('cycle-a');
      const b = ctx.name('cycle-b');
      await ctx.exchange('cycle-a', 'direct', {
        durable: false,
        arguments: { 'alternate-exchange': b },
      });
      const eb = await ctx.exchange('cycle-b', 'direct', {
        durable: false,
        arguments: { 'alternate-exchange': a },
      });
      await ctx.expectUnroutable(() => eb.publish('x', { routingKey: 'k', mandatory: true }));
    },
  },
  {
    name: 'a mandatory publish that matches no queue is reported unroutable (312 NO_ROUTE)',
    async run(_session, ctx) {
      const ex = await ctx.exchange('mandatory', 'direct', { durable: false });
      await ctx.expectUnroutable(() =>
        ex.publish('lost', { routingKey: 'nobody', mandatory: true }),
      );
      // Without mandatory the message is dropped quietly.
      await ex.publish('dropped', { routingKey: 'nobody' });
    },
  },
  {
    name: 'redeclaring an exchange differently fails with 406 naming the argument',
    async run(session, ctx) {
      const ex = await ctx.exchange('logs', 'fanout', { durable: false });
      const where = `for exchange '${ex.name}' in vhost '/'`;
      await expectAmqpError(
        session.exchange(ex.name, 'topic', { durable: false }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'type' ${where}: received 'topic' but current is 'fanout'`,
      );
      await expectAmqpError(
        session.exchange(ex.name, 'fanout', { durable: true }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'durable' ${where}: received 'true' but current is 'false'`,
      );
      await expectAmqpError(
        session.exchange(ex.name, 'fanout', { durable: false, autoDelete: true }),
        406,
        `inequivalent arg 'auto_delete' ${where}: received 'true' but current is 'false'`,
      );
      await expectAmqpError(
        session.exchange(ex.name, 'fanout', {
          durable: false,
          arguments: { 'alternate-exchange': 'x' },
        }),
        406,
        `inequivalent arg 'alternate-exchange' ${where}: received the value 'x' of type 'longstr' but current is none`,
      );
      // Other arguments are not compared; a passive declare checks only existence.
      await session.exchange(ex.name, 'fanout', { durable: false, arguments: { other: 1 } });
      await session.exchange(ex.name, 'direct', { passive: true });
    },
  },
  {
    name: 'exchange names are checked: missing 404, amq.* and the default exchange 403',
    async run(session, ctx) {
      const missing = ctx.name('missing');
      await expectAmqpError(
        session.exchange(missing, 'direct', { passive: true }),
        404,
        `NOT_FOUND - no exchange '${missing}' in vhost '/'`,
      );
      await expectAmqpError(
        session.exchange(`amq.${missing}`, 'direct'),
        403,
        `ACCESS_REFUSED - exchange name 'amq.${missing}' contains reserved prefix 'amq.*'`,
      );
      const q = await ctx.queue('default-bind', { durable: false });
      await expectAmqpError(
        q.bind('', q.name),
        403,
        'ACCESS_REFUSED - operation not permitted on the default exchange',
      );
      await expectAmqpError(
        q.bind(missing, 'k'),
        404,
        `NOT_FOUND - no exchange '${missing}' in vhost '/'`,
      );
      const amqDirect = await session.exchange('amq.direct', 'direct');
      await expectAmqpError(
        amqDirect.delete(),
        403,
        "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '/' not allowed",
      );
    },
  },
  {
    name: 'an unknown exchange type is refused with 406, closing the channel as RabbitMQ 4.x does (3.10: 503 closing the connection)',
    async run(_session, ctx) {
      const connection = await ctx.connection();
      const declare = (name: string) => connection.exchange(name, 'x-nonesuch' as ExchangeType);
      if (ctx.behaviour.unknownExchangeTypeClosesConnection) {
        await expectAmqpError(
          declare(ctx.name('unknown-type')),
          503,
          "COMMAND_INVALID - unknown exchange type 'x-nonesuch'",
        );
        return;
      }
      await expectAmqpError(
        declare(ctx.name('unknown-type')),
        406,
        "PRECONDITION_FAILED - unknown exchange type 'x-nonesuch'",
      );
      // Only the channel closed: the connection goes on.
      await connection.exchange('amq.direct', 'direct', { passive: true });
    },
  },
  {
    name: 'deleting the default exchange or any amq. name, a missing one too, is refused with 403',
    async run(session, ctx) {
      const missing = `amq.${ctx.name('nothing-here')}`;
      for (const ifUnused of [false, true]) {
        for (const name of ['amq.direct', 'amq.topic', missing]) {
          await expectAmqpError(
            ctx.deleteExchange(name, { ifUnused }),
            403,
            `ACCESS_REFUSED - deletion of system exchange '${name}' in vhost '/' not allowed`,
          );
        }
        await expectAmqpError(
          ctx.deleteExchange('', { ifUnused }),
          403,
          'ACCESS_REFUSED - operation not permitted on the default exchange',
        );
      }
      await expectAmqpError(
        session.exchange(missing, 'direct', { passive: true }),
        404,
        `NOT_FOUND - no exchange '${missing}' in vhost '/'`,
      );
      await session.exchange('amq.topic', 'topic', { passive: true });
    },
  },
  {
    name: 'deleting an exchange: ifUnused refuses while bound; publishing to a deleted one fails with 404',
    async run(_session, ctx) {
      const ex = await ctx.exchange('deleted', 'direct', { durable: false });
      const q = await ctx.queue('deleted-q', { durable: false });
      await q.bind(ex.name, 'k');
      await expectAmqpError(
        ex.delete({ ifUnused: true }),
        406,
        `PRECONDITION_FAILED - exchange '${ex.name}' in vhost '/' in use`,
      );
      await ex.delete();
      await ex.delete();
      await expectAmqpError(
        ex.publish('x', { routingKey: 'k' }),
        404,
        `NOT_FOUND - no exchange '${ex.name}' in vhost '/'`,
      );
    },
  },
  {
    name: 'an auto-delete exchange goes when its last binding goes',
    async run(session, ctx) {
      const ex = await ctx.exchange('auto', 'fanout', { durable: false, autoDelete: true });
      const q1 = await ctx.queue('auto-1', { durable: false });
      const q2 = await ctx.queue('auto-2', { durable: false });
      await q1.bind(ex.name);
      await q2.bind(ex.name);
      await q1.unbind(ex.name);
      await session.exchange(ex.name, 'fanout', { passive: true });
      await q2.unbind(ex.name);
      await expectAmqpError(session.exchange(ex.name, 'fanout', { passive: true }), 404);
    },
  },
];
