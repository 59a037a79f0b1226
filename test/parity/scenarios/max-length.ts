import { expect } from 'vitest';
import { drain, eventually, holder, publishAll, recorder, settled } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

/** A queue limited to two messages with the given overflow, dead-lettering to a fresh queue. */
async function limited(
  ctx: ParityContext,
  overflow: string | undefined,
  limit: Record<string, number>,
) {
  const dlq = await ctx.queue(`${overflow ?? 'default'}-dlq`, { durable: false });
  const q = await ctx.queue(`${overflow ?? 'default'}-limited`, {
    durable: false,
    arguments: {
      ...limit,
      ...(overflow && { 'x-overflow': overflow }),
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': dlq.name,
    },
  });
  return { q, dlq };
}

/** Reads the dead-letter queue until it holds `n` messages, returning `[body, reason]` pairs. */
export async function deadLettered(ctx: ParityContext, dlq: ParityQueue, n: number) {
  const got: [string, unknown][] = [];
  await eventually(
    async () => {
      for (let m = await dlq.get(); m; m = await dlq.get()) {
        got.push([m.bodyString() ?? '', m.properties.headers?.['x-first-death-reason']]);
      }
      return got.length;
    },
    (len) => len >= n,
    `${n} dead-lettered messages on ${ctx.target}`,
  );
  return got;
}

export const maxLengthScenarios: Scenario[] = [
  {
    name: 'x-max-length drops (and dead-letters) the oldest message by default (drop-head)',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length': 2 });
      await publishAll(q, ['a', 'b', 'c', 'd']);
      expect(await drain(q)).toEqual(['c', 'd']);
      expect(await deadLettered(ctx, dlq, 2)).toEqual([
        ['a', 'maxlen'],
        ['b', 'maxlen'],
      ]);
    },
  },
  {
    name: 'x-overflow drop-head counts only ready messages, not unacked ones',
    async run(_session, ctx) {
      const { q } = await limited(ctx, 'drop-head', { 'x-max-length': 1 });
      await publishAll(q, ['a']);
      const held = await q.get({ noAck: false });
      await publishAll(q, ['b']);
      expect(await drain(q)).toEqual(['b']);
      await held?.ack();
    },
  },
  {
    name: 'x-max-length-bytes drops by body bytes, dead-lettering with reason maxlen (maxlenbytes on mqlite)',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length-bytes': 4 });
      await publishAll(q, ['aa', 'bb', 'cc']);
      expect(await drain(q)).toEqual(['bb', 'cc']);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['aa', ctx.behaviour.maxLengthBytesReason]]);
    },
  },
  {
    name: 'x-overflow reject-publish refuses the new message and keeps the queue unchanged',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, 'reject-publish', { 'x-max-length': 2 });
      await publishAll(q, ['a', 'b']);
      await expect(q.publish('c')).rejects.toThrow();
      expect(await drain(q)).toEqual(['a', 'b']);
      await q.publish('d');
      expect(await drain(q)).toEqual(['d']);
      expect(await dlq.get()).toBeNull();
    },
  },
  {
    name: 'x-overflow reject-publish-dlx refuses the new message and dead-letters it',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, 'reject-publish-dlx', { 'x-max-length': 2 });
      await publishAll(q, ['a', 'b']);
      await expect(q.publish('c')).rejects.toThrow();
      expect(await drain(q)).toEqual(['a', 'b']);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['c', 'maxlen']]);
    },
  },
  {
    name: 'a requeue counts against x-max-length: the requeued head is dropped (and dead-lettered)',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length': 1 });
      await q.publish('m1');
      const held = await q.get({ noAck: false });
      await q.publish('m2');
      await held?.nack(true);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['m1', 'maxlen']]);
      expect(await drain(q)).toEqual(['m2']);
    },
  },
  {
    name: 'a requeue counts against x-max-length-bytes (reason maxlen; maxlenbytes on mqlite)',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length-bytes': 2 });
      await q.publish('m1');
      const held = await q.get({ noAck: false });
      await q.publish('m2');
      await held?.reject(true);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['m1', ctx.behaviour.maxLengthBytesReason]]);
      expect(await drain(q)).toEqual(['m2']);
    },
  },
  {
    name: "messages a closing consumer's connection requeues count against x-max-length",
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length': 1 });
      const consumer = await holder(ctx, q, 1);
      await q.publish('m1');
      await consumer.waitFor(1);
      await q.publish('m2');
      await consumer.stop();
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['m1', 'maxlen']]);
      expect(await drain(q)).toEqual(['m2']);
    },
  },
  {
    name: 'with x-overflow reject-publish a requeue may exceed the limit',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, 'reject-publish', { 'x-max-length': 1 });
      await q.publish('m1');
      const held = await q.get({ noAck: false });
      await q.publish('m2');
      await held?.nack(true);
      expect(await drain(q)).toEqual(['m1', 'm2']);
      expect(await dlq.get()).toBeNull();
    },
  },
  {
    name: 'an arriving message meets the length limit before its TTL: expiration 0 on a full queue pushes the head out, then expires',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length': 1 });
      await q.publish('m3');
      await q.publish('m4', { expiration: '0' });
      expect(await q.get()).toBeNull();
      expect(await deadLettered(ctx, dlq, 2)).toEqual([
        ['m3', 'maxlen'],
        ['m4', 'expired'],
      ]);
    },
  },
  {
    name: 'a message with expiration 0 that no byte limit admits is dropped by the limit (reason maxlen; maxlenbytes on mqlite)',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length-bytes': 0 });
      await q.publish('m1', { expiration: '0' });
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['m1', ctx.behaviour.maxLengthBytesReason]]);
      expect(await q.get()).toBeNull();
    },
  },
  {
    name: 'messages a closing consumer returns come back together before drop-head applies (a priority queue drops the highest first)',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length': 0, 'x-max-priority': 2 });
      const consumer = await holder(ctx, q, 2);
      await q.publish('low');
      await q.publish('high', { priority: 1 });
      await consumer.waitFor(2);
      await consumer.stop();
      expect(await deadLettered(ctx, dlq, 2)).toEqual([
        ['high', 'maxlen'],
        ['low', 'maxlen'],
      ]);
    },
  },
  {
    name: 'a multiple reject on a priority queue dead-letters the highest priority first',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-priority': 2 });
      const consumer = await recorder(q, { prefetch: 2 }, () => undefined);
      await q.publish('low');
      await q.publish('high', { priority: 1 });
      await consumer.waitFor(2);
      await consumer.received[1]?.nack(false, true);
      expect(await deadLettered(ctx, dlq, 2)).toEqual([
        ['high', 'rejected'],
        ['low', 'rejected'],
      ]);
      await consumer.cancel();
    },
  },
  {
    name: 'an expired message requeued into a full queue is dead-lettered by the limit, not its TTL (reason maxlen; maxlenbytes on mqlite for the byte limit)',
    async run(_session, ctx) {
      // drop-head is the default: stated for the second queue, it gives that one its own names.
      for (const [overflow, limit] of [
        [undefined, 'x-max-length'],
        ['drop-head', 'x-max-length-bytes'],
      ] as const) {
        const { q, dlq } = await limited(ctx, overflow, { [limit]: 0 });
        const consumer = await recorder(q, { prefetch: 1 }, () => undefined);
        // The queue is empty: the consumer gets it at once, before any limit or TTL applies.
        await q.publish('m1', { expiration: '0' });
        await consumer.waitFor(1);
        await consumer.received[0]!.nack(true);
        const reason = limit === 'x-max-length' ? 'maxlen' : ctx.behaviour.maxLengthBytesReason;
        expect(await deadLettered(ctx, dlq, 1)).toEqual([['m1', reason]]);
        await consumer.cancel();
      }
    },
  },
  {
    name: 'a message published right after a requeue to an empty queue goes to the consumer with room, whatever the limit',
    async run(_session, ctx) {
      const { q, dlq } = await limited(ctx, undefined, { 'x-max-length': 0 });
      const consumer = await recorder(q, { prefetch: 1 }, () => undefined);
      await q.publish('m1');
      await consumer.waitFor(1);
      await consumer.received[0]!.nack(true);
      // The nack and the publish go on different channels, which RabbitMQ does not order.
      await settled(consumer.received[0]!);
      await q.publish('m2');
      await consumer.waitFor(2, 'm2 delivered to the consumer');
      expect(consumer.bodies()).toEqual(['m1', 'm2']);
      expect(await deadLettered(ctx, dlq, 1)).toEqual([['m1', 'maxlen']]);
      await consumer.received[1]!.ack();
      await consumer.cancel();
    },
  },
];
