import { expect } from 'vitest';
import { drain, eventually, expectAmqpError } from '../helpers.js';
import type { Scenario } from '../types.js';

/** Exchange-to-exchange bindings and sender-selected distribution (`CC`, `BCC`). */
export const exchangeBindingScenarios: Scenario[] = [
  {
    name: 'a topic exchange bound to a fanout exchange: the fanout routes what the binding matched',
    async run(_session, ctx) {
      const topic = await ctx.exchange('e2e-topic', 'topic', { durable: false });
      const fanout = await ctx.exchange('e2e-fanout', 'fanout', { durable: false });
      await fanout.bind(topic.name, 'orders.eu.*');
      const direct = await ctx.queue('e2e-direct', { durable: false });
      await direct.bind(topic.name, 'orders.#');
      const copies = [
        await ctx.queue('e2e-copy-1', { durable: false }),
        await ctx.queue('e2e-copy-2', { durable: false }),
      ];
      for (const q of copies) await q.bind(fanout.name, 'ignored');
      for (const key of ['orders.eu.new', 'orders.us.new', 'stock.eu.new']) {
        await topic.publish(key, { routingKey: key });
      }
      expect(await drain(direct)).toEqual(['orders.eu.new', 'orders.us.new']);
      for (const q of copies) expect(await drain(q)).toEqual(['orders.eu.new']);
      await fanout.unbind(topic.name, 'orders.eu.*');
      await topic.publish('after', { routingKey: 'orders.eu.new' });
      for (const q of copies) expect(await drain(q)).toEqual([]);
    },
  },
  {
    name: 'exchanges bound in a cycle deliver each message once to each queue',
    async run(_session, ctx) {
      const a = await ctx.exchange('cycle-a', 'fanout', { durable: false });
      const b = await ctx.exchange('cycle-b', 'direct', { durable: false });
      const c = await ctx.exchange('cycle-c', 'topic', { durable: false });
      await b.bind(a.name, 'k');
      await c.bind(b.name, 'k');
      await a.bind(c.name, '#');
      await c.bind(a.name, 'k');
      const qa = await ctx.queue('cycle-qa', { durable: false });
      const qc = await ctx.queue('cycle-qc', { durable: false });
      await qa.bind(a.name);
      await qc.bind(c.name, '*');
      await qc.bind(b.name, 'k');
      await a.publish('from-a', { routingKey: 'k' });
      await c.publish('from-c', { routingKey: 'k' });
      await b.publish('other-key', { routingKey: 'x' });
      expect(await drain(qa)).toEqual(['from-a', 'from-c']);
      expect(await drain(qc)).toEqual(['from-a', 'from-c']);
    },
  },
  {
    name: 'deleting an exchange removes the bindings to it; an auto-delete source goes with its last binding',
    async run(session, ctx) {
      const source = await ctx.exchange('del-source', 'fanout', { durable: false });
      const middle = await ctx.exchange('del-middle', 'fanout', { durable: false });
      await middle.bind(source.name);
      const q = await ctx.queue('del-q', { durable: false });
      await q.bind(middle.name);
      await source.publish('before');
      expect(await drain(q)).toEqual(['before']);
      await middle.delete();
      const again = await ctx.exchange('del-middle', 'fanout', { durable: false });
      await q.bind(again.name);
      await source.publish('after');
      expect(await drain(q)).toEqual([]);

      const auto = await ctx.exchange('del-auto', 'fanout', { durable: false, autoDelete: true });
      await again.bind(auto.name);
      await again.unbind(auto.name);
      await expectAmqpError(
        session.exchange(auto.name, 'fanout', { passive: true }),
        404,
        /NOT_FOUND - no exchange 'parity-.*-del-auto' in vhost '\/'/,
      );
    },
  },
  {
    name: 'binding to or from a missing exchange is 404, from the default exchange 403',
    async run(session, ctx) {
      const ex = await ctx.exchange('e2e-checks', 'direct', { durable: false });
      const missing = ctx.name('e2e-missing');
      await expectAmqpError(ex.bind(missing), 404, `no exchange '${missing}' in vhost '/'`);
      const again = await session.exchange(ex.name, 'direct', { passive: true });
      await expectAmqpError(
        again.bind(''),
        403,
        /ACCESS_REFUSED - operation not permitted on the default exchange/,
      );
    },
  },
  {
    name: 'CC and BCC headers route to their keys too, each queue once; BCC is not delivered',
    async run(_session, ctx) {
      const ex = await ctx.exchange('cc', 'direct', { durable: false });
      const queues = [];
      for (const key of ['main', 'copy', 'blind']) {
        const q = await ctx.queue(`cc-${key}`, { durable: false });
        await q.bind(ex.name, key);
        queues.push(q);
      }
      await ex.publish('m', {
        routingKey: 'main',
        headers: { CC: ['copy', 'main'], BCC: ['blind'], kept: 'yes' },
      });
      for (const q of queues) {
        const msg = await q.get({ noAck: true });
        expect(msg?.bodyString()).toBe('m');
        expect(msg?.routingKey).toBe('main');
        const { 'x-delivery-count': _count, ...headers } = msg?.properties.headers ?? {};
        expect(headers).toEqual({ CC: ['copy', 'main'], kept: 'yes' });
        expect(await q.get({ noAck: true })).toBeNull();
      }
    },
  },
  {
    name: 'a CC header that is not an array of strings is refused with 406',
    async run(session, ctx) {
      const q = await ctx.queue('cc-string', { durable: false });
      await expectAmqpError(
        session
          .exchange('amq.direct', 'direct')
          .then((ex) => ex.publish('x', { routingKey: q.name, headers: { CC: 'other' } })),
        406,
        'invalid message: {unacceptable_type_in_header,"CC",longstr}',
      );
    },
  },
  {
    name: 'a rejected message with CC is dead-lettered by its key and CC, or by the dead-letter routing key alone (CC dropped)',
    async run(_session, ctx) {
      const dlx = await ctx.exchange('cc-dlx', 'direct', { durable: false });
      const targets: Record<string, Awaited<ReturnType<typeof ctx.queue>>> = {};
      for (const key of ['own', 'copy', 'fixed']) {
        targets[key] = await ctx.queue(`cc-dl-${key}`, { durable: false });
        await targets[key].bind(dlx.name, key);
      }
      const byKeys = await ctx.queue('cc-dl-src', {
        durable: false,
        arguments: { 'x-dead-letter-exchange': dlx.name },
      });
      const byFixed = await ctx.queue('cc-dl-src-fixed', {
        durable: false,
        arguments: { 'x-dead-letter-exchange': dlx.name, 'x-dead-letter-routing-key': 'fixed' },
      });
      const ex = await ctx.exchange('cc-dl-in', 'direct', { durable: false });
      await byKeys.bind(ex.name, 'own');
      await byFixed.bind(ex.name, 'other');
      await ex.publish('one', { routingKey: 'own', headers: { CC: ['copy'] } });
      await ex.publish('two', { routingKey: 'other', headers: { CC: ['copy'] } });
      for (const q of [byKeys, byFixed]) {
        const m = await q.get({ noAck: false });
        await m?.reject(false);
      }
      const arrived = (q: (typeof targets)[string]) =>
        eventually(
          () => q.get({ noAck: true }),
          (m) => m !== null,
          `a dead letter in ${q.name}`,
        );
      const own = await arrived(targets.own!);
      const copy = await arrived(targets.copy!);
      const fixed = await arrived(targets.fixed!);
      expect([own?.bodyString(), copy?.bodyString(), fixed?.bodyString()]).toEqual([
        'one',
        'one',
        'two',
      ]);
      expect(own?.properties.headers?.CC).toEqual(['copy']);
      const [death] = (own?.properties.headers?.['x-death'] ?? []) as Record<string, unknown>[];
      expect(death?.['routing-keys']).toEqual(['own', 'copy']);
      expect(fixed?.properties.headers?.CC).toBeUndefined();
      for (const q of Object.values(targets)) expect(await drain(q)).toEqual([]);
    },
  },
];
