import { expect } from 'vitest';
import { drain, expectAmqpError, holder, publishAll, recorder, settled } from '../helpers.js';
import type { ParityContext, Scenario } from '../types.js';
import { deadLettered } from './max-length.js';
import { publishWithPriorities } from './priority.js';

const QUORUM = { 'x-queue-type': 'quorum' };

/** A quorum queue dead-lettering to a fresh queue through the default exchange. */
async function withDeadLetters(ctx: ParityContext, args: Record<string, unknown>) {
  const dlq = await ctx.queue('quorum-dlq', { durable: false });
  const q = await ctx.queue('quorum-src', {
    arguments: {
      ...QUORUM,
      ...args,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': dlq.name,
    },
  });
  return { q, dlq };
}

const scenarios: Scenario[] = [
  {
    name: 'a quorum queue refuses auto-delete, exclusive and non-durable with 406 invalid property',
    async run(session, ctx) {
      const name = ctx.name('quorum-flags');
      for (const [options, property] of [
        [{ autoDelete: true }, 'auto-delete'],
        [{ exclusive: true }, 'exclusive-owner'],
        [{ durable: false }, 'non-durable'],
      ] as const) {
        await expectAmqpError(
          session.queue(name, { ...options, arguments: QUORUM }),
          406,
          `invalid property '${property}' for queue '${name}' in vhost '/'`,
        );
      }
    },
  },
  {
    name: 'a quorum queue refuses x-max-priority, x-queue-mode and an unknown dead-letter strategy',
    async run(session, ctx) {
      const name = ctx.name('quorum-args');
      for (const arg of ['x-max-priority', 'x-queue-mode'] as const) {
        await expectAmqpError(
          session.queue(name, {
            arguments: { ...QUORUM, [arg]: arg === 'x-queue-mode' ? 'lazy' : 5 },
          }),
          406,
          `invalid arg '${arg}' for queue '${name}' in vhost '/' of queue type rabbit_quorum_queue`,
        );
      }
      await expectAmqpError(
        session.queue(name, { arguments: { ...QUORUM, 'x-dead-letter-strategy': 'sometimes' } }),
        406,
        `invalid arg 'x-dead-letter-strategy' for queue '${name}' in vhost '/': invalid_dlx_strategy`,
      );
      await expectAmqpError(
        session.queue(name, { arguments: { ...QUORUM, 'x-queue-leader-locator': 'nearest' } }),
        406,
        'invalid_queue_locator_arg',
      );
    },
  },
  {
    name: 'replication arguments of a quorum queue are accepted; redeclaring it as classic or back is 406 x-queue-type',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-eq', {
        arguments: {
          ...QUORUM,
          'x-quorum-initial-group-size': 3,
          'x-queue-leader-locator': 'balanced',
        },
      });
      const classic = await ctx.queue('quorum-eq-classic', {});
      // Another connection: a session remembers the queues it declared and would not redeclare.
      const other = await ctx.connection();
      await expectAmqpError(
        other.queue(q.name, {}),
        406,
        `inequivalent arg 'x-queue-type' for queue '${q.name}' in vhost '/': received none but current is the value 'quorum' of type 'longstr'`,
      );
      const again = await ctx.connection();
      await expectAmqpError(
        again.queue(classic.name, { arguments: QUORUM }),
        406,
        `inequivalent arg 'x-queue-type' for queue '${classic.name}' in vhost '/': received the value 'quorum' of type 'longstr' but current is none`,
      );
    },
  },
  {
    name: 'a quorum queue is FIFO; basic.get, purge and declare-ok count ready messages',
    async run(session, ctx) {
      const q = await ctx.queue('quorum-fifo', { arguments: QUORUM });
      await publishAll(q, ['a', 'b', 'c']);
      const again = await session.queue(q.name, { arguments: QUORUM });
      expect(again.name).toBe(q.name);
      const first = await q.get({ noAck: true });
      expect(first?.bodyString()).toBe('a');
      await q.purge();
      expect(await drain(q)).toEqual([]);
    },
  },
  {
    name: 'a quorum queue writes x-delivery-count on redeliveries and dead-letters past x-delivery-limit (reason delivery_limit)',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, { 'x-delivery-limit': 1 });
      await publishAll(q, ['poison']);
      const r = await recorder(q, { prefetch: 1 }, (msg) => msg.nack(true));
      await r.waitFor(2);
      expect(r.received[0]?.redelivered).toBe(false);
      expect(r.received[0]?.properties.headers?.['x-delivery-count']).toBeUndefined();
      expect(r.received[1]?.redelivered).toBe(true);
      expect(r.received[1]?.properties.headers?.['x-delivery-count']).toBe(1);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['poison', 'delivery_limit']]);
      await r.cancel();
    },
  },
  {
    name: 'a quorum queue declared without x-delivery-limit has 20 on mqlite (RabbitMQ 4.x), none on RabbitMQ 3.10',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, {});
      await publishAll(q, ['poison']);
      const limit = ctx.behaviour.quorumRules === '3.10' ? undefined : 20;
      const returns = (limit ?? 20) + 1;
      for (let i = 0; i < returns; i++) {
        const msg = await q.get({ noAck: false });
        expect(msg?.bodyString()).toBe('poison');
        await msg?.nack(true);
        if (msg) await settled(msg);
      }
      if (limit === undefined) {
        expect(await drain(q)).toEqual(['poison']);
      } else {
        expect(await deadLettered(ctx, dlq, 1)).toEqual([['poison', 'delivery_limit']]);
        expect(await drain(q)).toEqual([]);
      }
    },
  },
  {
    name: 'x-delivery-limit -1 means no limit on mqlite, as on RabbitMQ 4.x (3.10 dead-letters at the first return)',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, { 'x-delivery-limit': -1 });
      await publishAll(q, ['a']);
      const msg = await q.get({ noAck: false });
      await msg?.nack(true);
      if (msg) await settled(msg);
      if (ctx.behaviour.quorumRules === '3.10') {
        expect(await deadLettered(ctx, dlq, 1)).toEqual([['a', 'delivery_limit']]);
        return;
      }
      for (let i = 0; i < 3; i++) {
        const again = await q.get({ noAck: false });
        await again?.nack(true);
      }
      expect(await drain(q)).toEqual(['a']);
      expect(await drain(dlq)).toEqual([]);
    },
  },
  {
    name: 'a quorum queue applies x-max-length with drop-head (dead-lettering maxlen), and reject-publish once past the limit',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, { 'x-max-length': 2 });
      await publishAll(q, ['a', 'b', 'c']);
      expect(await drain(q)).toEqual(['b', 'c']);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['a', 'maxlen']]);
      const full = await ctx.queue('quorum-reject', {
        arguments: { ...QUORUM, 'x-max-length': 1, 'x-overflow': 'reject-publish' },
      });
      // A publish is refused once the queue is past its limit: it takes one message more.
      await publishAll(full, ['x', 'y']);
      await expect(full.publish('z')).rejects.toThrow();
      expect(await drain(full)).toEqual(['x', 'y']);
    },
  },
  {
    name: 'a quorum queue with reject-publish refuses publishes once past x-max-length-bytes until it is back to 80% of it',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-low-mark', {
        arguments: { ...QUORUM, 'x-max-length-bytes': 8, 'x-overflow': 'reject-publish' },
      });
      // 9 bytes: the message that passes the limit is taken, the next one refused.
      await publishAll(q, ['a', 'bbbbbbb', 'c']);
      await expect(q.publish('d')).rejects.toThrow();
      // 8 bytes left ready: within the limit, still above its 80% (6 bytes).
      const a = await q.get({ noAck: true });
      expect(a?.bodyString()).toBe('a');
      await expect(q.publish('e')).rejects.toThrow();
      // 1 byte left ready (the unacknowledged message does not count): publishes go in again.
      const b = await q.get({ noAck: false });
      expect(b?.bodyString()).toBe('bbbbbbb');
      await publishAll(q, ['f']);
      await b?.ack();
      expect(await drain(q)).toEqual(['c', 'f']);
    },
  },
  {
    name: 'a quorum queue refusing publishes past x-max-length takes them again once a get leaves 80% of it',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-low-count', {
        arguments: { ...QUORUM, 'x-max-length': 5, 'x-overflow': 'reject-publish' },
      });
      await publishAll(q, ['a', 'b', 'c', 'd', 'e', 'f']);
      await expect(q.publish('g')).rejects.toThrow();
      // 5 ready, then 4: the limit is 5, its 80% is 4.
      expect((await q.get({ noAck: true }))?.bodyString()).toBe('a');
      await expect(q.publish('h')).rejects.toThrow();
      expect((await q.get({ noAck: true }))?.bodyString()).toBe('b');
      await publishAll(q, ['i']);
      expect(await drain(q)).toEqual(['c', 'd', 'e', 'f', 'i']);
    },
  },
  {
    name: 'a quorum queue dead-letters what one publish drops past x-max-length-bytes oldest first on mqlite (RabbitMQ 4.2.1 and later); RabbitMQ 3.10 newest first',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, { 'x-max-length-bytes': 2 });
      await publishAll(q, ['a', 'bcd']);
      // 4 bytes: a goes, and bcd alone is still past the limit, so it goes too.
      expect(await drain(q)).toEqual([]);
      const oldestFirst = ['a', 'bcd'].map((body) => [body, ctx.behaviour.maxLengthBytesReason]);
      expect(await deadLettered(ctx, dlq, 2)).toEqual(
        ctx.behaviour.quorumRules === '3.10' ? oldestFirst.reverse() : oldestFirst,
      );
    },
  },
  {
    name: 'a quorum queue drops heads past x-max-length after a requeue, once a consumer with room took its share',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, { 'x-max-length': 1, 'x-delivery-limit': 5 });
      const c1 = await holder(ctx, q, 3);
      await publishAll(q, ['a', 'b', 'c']);
      await c1.waitFor(3);
      const c2 = await recorder(q, { prefetch: 1 }, () => undefined);
      // a, b and c come back; c2 takes a; b, the head of what is left, is one over the limit.
      await c1.stop();
      await c2.waitFor(1);
      expect(c2.received.map((m) => [m.bodyString(), m.redelivered])).toEqual([['a', true]]);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['b', 'maxlen']]);
      expect(await drain(q)).toEqual(['c']);
      await c2.received[0]!.ack();
      await c2.cancel();
    },
  },
  {
    name: 'a quorum queue expires messages by x-message-ttl and per-message expiration, dead-lettering expired',
    async run(_session, ctx) {
      const { q, dlq } = await withDeadLetters(ctx, { 'x-message-ttl': 100 });
      await publishAll(q, ['old']);
      await q.publish('short', { expiration: '50' });
      await ctx.elapse(300);
      expect(await drain(q)).toEqual([]);
      const dead = await deadLettered(ctx, dlq, 2);
      expect(dead.map(([, reason]) => reason)).toEqual(['expired', 'expired']);
    },
  },
  {
    name: 'a quorum queue with x-single-active-consumer delivers to the first consumer only and refuses basic.get with 405',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-sac', {
        arguments: { ...QUORUM, 'x-single-active-consumer': true },
      });
      const first = await recorder(q, { prefetch: 10 });
      const second = await recorder(q, { prefetch: 10 });
      await publishAll(q, ['a', 'b', 'c']);
      await first.waitFor(3);
      expect(first.bodies()).toEqual(['a', 'b', 'c']);
      expect(second.received).toEqual([]);
      await first.cancel();
      await second.cancel();
      await expectAmqpError(
        q.get(),
        405,
        `RESOURCE_LOCKED - cannot obtain access to locked queue '${q.name}' in vhost '/'. basic.get operations are not supported by quorum queues with single active consumer`,
      );
    },
  },
  {
    name: 'a quorum queue delivers returned messages first, in the order they came back',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-returns', {
        arguments: { ...QUORUM, 'x-delivery-limit': 10 },
      });
      await publishAll(q, ['a', 'b', 'c', 'd']);
      const a = await q.get({ noAck: false });
      const b = await q.get({ noAck: false });
      await b?.nack(true);
      if (b) await settled(b);
      await a?.nack(true);
      if (a) await settled(a);
      expect(await drain(q)).toEqual(['b', 'a', 'c', 'd']);
    },
  },
  {
    name: 'a quorum queue serves priorities above 4 and normal ones 2:1 on mqlite (RabbitMQ 4.x); RabbitMQ 3.10 ignores priorities',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-prio', { arguments: QUORUM });
      await publishWithPriorities(q, [
        ['n1', undefined],
        ['n2', 4],
        ['h1', 5],
        ['h2', 9],
        ['h3', 6],
        ['n3', 0],
      ]);
      await ctx.elapse(0);
      expect(await drain(q)).toEqual(
        ctx.behaviour.quorumRules === '3.10'
          ? ['n1', 'n2', 'h1', 'h2', 'h3', 'n3']
          : ['h1', 'h2', 'n1', 'h3', 'n2', 'n3'],
      );
    },
  },
  {
    name: 'at-least-once dead-lettering keeps a dead letter no queue takes in the source, counted against x-max-length',
    async run(_session, ctx) {
      const AT_LEAST_ONCE = {
        ...QUORUM,
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
        'x-max-length': 1,
      };
      // Confirmed by its target: it leaves the source, which takes publishes again.
      const { q, dlq } = await withDeadLetters(ctx, AT_LEAST_ONCE);
      await publishAll(q, ['a']);
      const a = await q.get({ noAck: false });
      await a?.reject(false);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['a', 'rejected']]);
      await publishAll(q, ['b', 'c']);
      expect(await drain(q)).toEqual(['b', 'c']);
      // Its dead-letter exchange does not exist: it stays, and fills the one place.
      const held = await ctx.queue('quorum-alo', {
        arguments: { ...AT_LEAST_ONCE, 'x-dead-letter-exchange': ctx.name('alo-missing') },
      });
      await publishAll(held, ['x']);
      const x = await held.get({ noAck: false });
      await x?.reject(false);
      if (x) await settled(x);
      await publishAll(held, ['y']);
      await expect(held.publish('z')).rejects.toThrow();
      expect(await drain(held)).toEqual(['y']);
    },
  },
  {
    name: 'a quorum queue refuses an if-unused delete with 540 (RabbitMQ then closes the connection)',
    async run(_session, ctx) {
      const q = await ctx.queue('quorum-del', { arguments: QUORUM });
      await expectAmqpError(
        q.delete({ ifUnused: true }),
        540,
        `NOT_IMPLEMENTED - cannot delete queue '${q.name}' in vhost '/'. queue.delete operations with if-unused flag set are not supported by quorum queues`,
      );
    },
  },
];

/** LavinMQ 2.9.1 takes `x-queue-type: quorum` for a classic queue: none of these hold there. */
export const quorumScenarios: Scenario[] = scenarios.map((scenario) => ({
  ...scenario,
  differsOn: { lavinmq: 'has no quorum queues (declares a classic queue)' },
}));
