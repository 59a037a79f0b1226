import { expect } from 'vitest';
import { drain, publishAll } from '../helpers.js';
import { POLICY_TARGETS } from '../targets.js';
import type { ParityQueue, Scenario } from '../types.js';
import { deadLettered } from './max-length.js';

/** Policies are set with `rabbitmqctl`, which reaches the local RabbitMQ only. */
const only = {
  targets: POLICY_TARGETS,
  reason: 'policies are set with rabbitmqctl, which reaches the local RabbitMQ only',
};

/** A pattern matching exactly the given queues. */
function exactly(...queues: ParityQueue[]): string {
  return `^(${queues.map((q) => q.name).join('|')})$`;
}

/** Dead-letter arguments to `dlq` through the default exchange. */
function toQueue(dlq: ParityQueue): Record<string, string> {
  return { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': dlq.name };
}

export const policyScenarios: Scenario[] = [
  {
    name: 'a delivery-limit -1 policy lifts the default limit of a quorum queue on mqlite (RabbitMQ 4.x); RabbitMQ 3.10 refuses it',
    only,
    async run(_session, ctx) {
      const dlq = await ctx.queue('dl-none-dlq', { durable: false });
      const q = await ctx.queue('dl-none', {
        arguments: { 'x-queue-type': 'quorum', ...toQueue(dlq) },
      });
      const setting = ctx.policy('dl-none', {
        pattern: exactly(q),
        applyTo: 'queues',
        definition: { 'delivery-limit': -1 },
      });
      if (ctx.behaviour.quorumRules === '3.10') {
        await expect(setting).rejects.toThrow('-1 is not a valid delivery limit');
        return;
      }
      await setting;
      await publishAll(q, ['a', 'b']);
      for (let i = 0; i < 21; i++) {
        const msg = await q.get({ noAck: false });
        await msg?.nack(true);
      }
      // No limit: each return went to the back of the queue, none was dead-lettered.
      expect(await drain(q)).toEqual(['b', 'a']);
      expect(await drain(dlq)).toEqual([]);
    },
  },
  {
    name: 'a max-length policy on a full queue drops and dead-letters its head at once; clearing it lifts the limit',
    only,
    async run(_session, ctx) {
      const dlq = await ctx.queue('ml-dlq', { durable: false });
      const q = await ctx.queue('ml', { durable: false, arguments: toQueue(dlq) });
      await publishAll(q, ['1', '2', '3', '4']);
      const policy = await ctx.policy('ml', {
        pattern: exactly(q),
        applyTo: 'queues',
        definition: { 'max-length': 2 },
      });
      expect(await deadLettered(ctx, dlq, 2)).toEqual([
        ['1', 'maxlen'],
        ['2', 'maxlen'],
      ]);
      expect(await drain(q)).toEqual(['3', '4']);
      await ctx.clearPolicy(policy);
      await publishAll(q, ['5', '6', '7']);
      expect(await drain(q)).toEqual(['5', '6', '7']);
    },
  },
  {
    name: 'a policy of max-length with overflow reject-publish drops the head of a full queue first, then refuses',
    only,
    async run(_session, ctx) {
      const dlq = await ctx.queue('mlr-dlq', { durable: false });
      const q = await ctx.queue('mlr', { durable: false, arguments: toQueue(dlq) });
      await publishAll(q, ['1', '2', '3']);
      await ctx.policy('mlr', {
        pattern: exactly(q),
        applyTo: 'queues',
        definition: { 'max-length': 2, overflow: 'reject-publish' },
      });
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['1', 'maxlen']]);
      await expect(publishAll(q, ['4'])).rejects.toThrow();
      expect(await drain(q)).toEqual(['2', '3']);
      expect(await drain(dlq)).toEqual([]);
    },
  },
  {
    name: 'a message-ttl policy expires what is published after it, dead-lettered by a dead-letter-exchange policy',
    only,
    async run(_session, ctx) {
      const dlq = await ctx.queue('ttl-dlq', { durable: false });
      const q = await ctx.queue('ttl', { durable: false });
      await publishAll(q, ['before']);
      await ctx.policy('ttl', {
        pattern: exactly(q),
        applyTo: 'queues',
        definition: {
          'message-ttl': 100,
          'dead-letter-exchange': '',
          'dead-letter-routing-key': dlq.name,
        },
      });
      await publishAll(q, ['after']);
      await ctx.elapse(300);
      // RabbitMQ expires a message once it is at the head: the one before it goes first.
      expect(await drain(q)).toEqual(['before']);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['after', 'expired']]);
    },
  },
  {
    name: 'with an argument and a policy, the lower max-length wins and the declared dead-letter-exchange wins',
    only,
    async run(_session, ctx) {
      const argDlq = await ctx.queue('res-arg-dlq', { durable: false });
      const policyDlq = await ctx.queue('res-policy-dlq', { durable: false });
      const low = await ctx.queue('res-low', {
        durable: false,
        arguments: { 'x-max-length': 1, ...toQueue(argDlq) },
      });
      const high = await ctx.queue('res-high', {
        durable: false,
        arguments: { 'x-max-length': 5 },
      });
      await ctx.policy('res', {
        pattern: exactly(low, high),
        applyTo: 'queues',
        definition: {
          'max-length': 2,
          'dead-letter-exchange': '',
          'dead-letter-routing-key': policyDlq.name,
        },
      });
      await publishAll(low, ['a', 'b', 'c']);
      await publishAll(high, ['a', 'b', 'c']);
      expect(await deadLettered(ctx, argDlq, 2)).toEqual([
        ['a', 'maxlen'],
        ['b', 'maxlen'],
      ]);
      expect(await deadLettered(ctx, policyDlq, 1)).toEqual([['a', 'maxlen']]);
      expect(await drain(low)).toEqual(['c']);
      expect(await drain(high)).toEqual(['b', 'c']);
    },
  },
];
