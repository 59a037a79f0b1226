import { expect } from 'vitest';
import { Exchanges } from '../../../src/exchanges/index.js';
import { drain, expectAmqpError } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

const WEIGHTS = ['10', '20', '5'];
const KEYS = Array.from({ length: 24 }, (_, i) => `key-${i}`);

/**
 * Declares a consistent-hash exchange with `args` (its name and its queues' end in `suffix`),
 * binds three queues with `WEIGHTS`, publishes each key's message (its body is the key) `times`
 * times with `properties(key)`, and returns the queue names and, per key, the queues that
 * received it.
 */
async function hashRouting(
  ctx: ParityContext,
  args: Record<string, string>,
  properties: (key: string) => Record<string, unknown> = (key) => ({ routingKey: key }),
  { suffix = 'chx', times = 1 } = {},
) {
  const ex = await ctx.exchange(suffix, 'x-consistent-hash', { durable: false, arguments: args });
  const queues: ParityQueue[] = [];
  for (const [i, weight] of WEIGHTS.entries()) {
    const q = await ctx.queue(`${suffix}-q${i}`, { durable: false });
    await q.bind(ex.name, weight);
    queues.push(q);
  }
  for (let n = 0; n < times; n++) for (const key of KEYS) await ex.publish(key, properties(key));
  const reached: Record<string, string[]> = Object.fromEntries(KEYS.map((k) => [k, []]));
  for (const q of queues) for (const body of await drain(q)) reached[body]?.push(q.name);
  return { queues: queues.map((q) => q.name), reached };
}

/** Where mqlite's consistent-hash exchange (LavinMQ's ring) sends each hash key, for `queues`. */
function expectedRouting(queues: string[], algorithm: string, hashKeys = KEYS) {
  const ex = new Exchanges();
  ex.declare('x', 'x-consistent-hash', { arguments: { 'x-algorithm': algorithm } });
  for (const [i, q] of queues.entries()) ex.bind('x', q, WEIGHTS[i]);
  return Object.fromEntries(KEYS.map((k, i) => [k, [...ex.route('x', hashKeys[i] ?? k)]]));
}

const LAVINMQ_RING = {
  targets: ['mqlite', 'mqlite-wire', 'lavinmq'],
  reason: "RabbitMQ's plugin places queues on a ring of its own",
};

export const consistentHashScenarios: Scenario[] = [
  {
    name: 'a consistent-hash exchange sends each message to one queue, the same one for the same key',
    async run(_session, ctx) {
      const { reached } = await hashRouting(ctx, {}, undefined, { times: 2 });
      for (const key of KEYS) {
        expect(reached[key], key).toHaveLength(2);
        expect(reached[key]?.[0], key).toBe(reached[key]?.[1]);
      }
    },
  },
  {
    name: 'a consistent-hash exchange sends each routing key to the queue LavinMQ hashes it to',
    only: LAVINMQ_RING,
    async run(_session, ctx) {
      const { queues, reached } = await hashRouting(ctx, {});
      expect(reached).toEqual(expectedRouting(queues, 'ring'));
    },
  },
  {
    name: 'x-algorithm jump places routing keys by jump consistent hashing, as LavinMQ does',
    only: LAVINMQ_RING,
    async run(_session, ctx) {
      const { queues, reached } = await hashRouting(ctx, { 'x-algorithm': 'jump' });
      expect(reached).toEqual(expectedRouting(queues, 'jump'));
    },
  },
  {
    name: 'x-hash-on hashes a header instead of the routing key, as LavinMQ does',
    only: { targets: LAVINMQ_RING.targets, reason: 'x-hash-on is LavinMQ’s argument' },
    async run(_session, ctx) {
      const users = KEYS.map((k) => `user-${k}`);
      const { queues, reached } = await hashRouting(ctx, { 'x-hash-on': 'user' }, (key) => ({
        routingKey: 'same-for-all',
        headers: { user: `user-${key}` },
      }));
      expect(reached).toEqual(expectedRouting(queues, 'ring', users));
    },
  },
  {
    name: 'a publish whose x-hash-on header is not a string is refused with 406',
    only: { targets: LAVINMQ_RING.targets, reason: 'x-hash-on is LavinMQ’s argument' },
    async run(_session, ctx) {
      const ex = await ctx.exchange('chx', 'x-consistent-hash', {
        durable: false,
        arguments: { 'x-hash-on': 'user' },
      });
      const q = await ctx.queue('chx-q', { durable: false });
      await q.bind(ex.name, '1');
      await expectAmqpError(
        ex.publish('x', { headers: { user: 5 } }),
        406,
        'PRECONDITION_FAILED - Routing header must be string',
      );
      const again = await ctx.exchange('chx', 'x-consistent-hash', {
        durable: false,
        arguments: { 'x-hash-on': 'user' },
      });
      await again.publish('y', { headers: { user: 'u' } });
      expect(await drain(q)).toEqual(['y']);
    },
  },
  {
    name: 'hash-header and hash-property hash a header or a property instead of the routing key',
    only: { targets: ['mqlite', 'mqlite-wire', 'rabbitmq'], reason: 'RabbitMQ’s arguments' },
    async run(_session, ctx) {
      // Every message has its own routing key; two messages share each header or property value.
      const userOf = (key: string) => `user-${KEYS.indexOf(key) % (KEYS.length / 2)}`;
      const byHeader = await hashRouting(
        ctx,
        { 'hash-header': 'user' },
        (key) => ({ routingKey: key, headers: { user: userOf(key) } }),
        { suffix: 'chx-h' },
      );
      const byProperty = await hashRouting(
        ctx,
        { 'hash-property': 'message_id' },
        (key) => ({ routingKey: key, messageId: userOf(key) }),
        { suffix: 'chx-p' },
      );
      for (const { reached } of [byHeader, byProperty]) {
        const queueOf: Record<string, string[]> = {};
        for (const key of KEYS) (queueOf[userOf(key)] ??= []).push(...(reached[key] ?? []));
        for (const queues of Object.values(queueOf)) {
          expect(queues).toHaveLength(2);
          expect(queues[0]).toBe(queues[1]);
        }
      }
    },
  },
  {
    name: 'a consistent-hash binding key that is not a positive integer is refused with 406',
    differsOn: { lavinmq: 'its own wording; accepts 0 and surrounding spaces' },
    async run(_session, ctx) {
      const ex = await ctx.exchange('chx', 'x-consistent-hash', { durable: false });
      const q = await ctx.queue('chx-q', { durable: false });
      await expectAmqpError(
        q.bind(ex.name, 'abc'),
        406,
        'PRECONDITION_FAILED - The binding key must be an integer: <<"abc">>',
      );
      const again = await ctx.queue('chx-q2', { durable: false });
      await expectAmqpError(
        again.bind(ex.name, '0'),
        406,
        'PRECONDITION_FAILED - The binding key must be greater than 0',
      );
    },
  },
  {
    name: 'a consistent-hash exchange with both hash-header and hash-property, or an unknown property, is refused with 406',
    differsOn: { lavinmq: 'ignores both arguments' },
    async run(_session, ctx) {
      await expectAmqpError(
        ctx.exchange('chx', 'x-consistent-hash', {
          durable: false,
          arguments: { 'hash-header': 'h', 'hash-property': 'message_id' },
        }),
        406,
        'PRECONDITION_FAILED - hash-header and hash-property are mutually exclusive',
      );
      await expectAmqpError(
        ctx.exchange('chx2', 'x-consistent-hash', {
          durable: false,
          arguments: { 'hash-property': 'foo' },
        }),
        406,
        'PRECONDITION_FAILED - Unsupported property: foo',
      );
    },
  },
];
