import { expect } from 'vitest';
import { countOf, drain, expectAmqpError, publishAll, recorder } from '../helpers.js';
import type { Scenario } from '../types.js';

export const classicScenarios: Scenario[] = [
  {
    name: 'a classic queue delivers in publish order, to get and to a subscriber',
    async run(_session, ctx) {
      const q = await ctx.queue('fifo', { durable: false });
      await publishAll(q, ['a', 'b', 'c']);
      expect(await drain(q)).toEqual(['a', 'b', 'c']);
      expect(await q.get()).toBeNull();
      await publishAll(q, ['d', 'e', 'f']);
      const rec = await recorder(q, { prefetch: 10 });
      await rec.waitFor(3);
      expect(rec.bodies()).toEqual(['d', 'e', 'f']);
      expect(rec.received.map((m) => m.redelivered)).toEqual([false, false, false]);
      await rec.cancel();
    },
  },
  {
    name: 'a message body and properties arrive as published',
    async run(_session, ctx) {
      const q = await ctx.queue('props', { durable: false });
      const timestamp = new Date(Math.floor(Date.now() / 1000) * 1000);
      await q.publish('héllo', {
        contentType: 'text/plain',
        headers: { a: 1, b: 'x', c: true, nested: { k: [1, 'two'] } },
        messageId: 'm-1',
        correlationId: 'c-1',
        type: 't',
        appId: 'app',
        timestamp,
      });
      const msg = await q.get();
      expect(msg?.bodyString()).toBe('héllo');
      expect(msg?.exchange).toBe('');
      expect(msg?.routingKey).toBe(q.name);
      expect(msg?.properties).toMatchObject({
        contentType: 'text/plain',
        headers: { a: 1, b: 'x', c: true, nested: { k: [1, 'two'] } },
        messageId: 'm-1',
        correlationId: 'c-1',
        type: 't',
        appId: 'app',
        timestamp,
      });
    },
  },
  {
    name: 'a nacked message returns to the head of the queue, redelivered',
    async run(_session, ctx) {
      const q = await ctx.queue('requeue', { durable: false });
      await publishAll(q, ['a', 'b']);
      const first = await q.get({ noAck: false });
      expect(first?.bodyString()).toBe('a');
      expect(first?.redelivered).toBe(false);
      await first?.nack(true);
      const again = await q.get({ noAck: false });
      expect(again?.bodyString()).toBe('a');
      expect(again?.redelivered).toBe(true);
      await again?.ack();
      const next = await q.get({ noAck: false });
      expect([next?.bodyString(), next?.redelivered]).toEqual(['b', false]);
      await next?.reject(false);
      expect(await q.get()).toBeNull();
    },
  },
  {
    name: 'after a subscription is cancelled its unacked messages return to the queue, redelivered (on mqlite: once nacked, as cancel leaves them settleable)',
    async run(_session, ctx) {
      const q = await ctx.queue('cancel', { durable: false });
      await publishAll(q, ['a', 'b', 'c']);
      const rec = await recorder(q, { prefetch: 2 }, () => undefined);
      await rec.waitFor(2);
      await rec.cancel();
      if (!ctx.behaviour.cancelRequeuesUnacked) {
        // mqlite's cancel is basic.cancel alone: the unacked stay with the consumer, settleable.
        for (const m of rec.received) await m.nack(true);
      }
      const back = [];
      for (let m = await q.get(); m; m = await q.get()) back.push([m.bodyString(), m.redelivered]);
      expect(back).toEqual([
        ['a', true],
        ['b', true],
        ['c', false],
      ]);
    },
  },
  {
    name: 'consumeOne waits for the next message, and times out when none comes',
    async run(_session, ctx) {
      const q = await ctx.queue('one', { durable: false });
      const waiting = q.consumeOne({ timeout: 2000 });
      await q.publish('x');
      expect((await waiting).bodyString()).toBe('x');
      const late = q.consumeOne({ timeout: 20 });
      await ctx.elapse(20);
      // The client says "consumeOne timed out", mqlite "no message on queue ... within 20 ms".
      await expect(late).rejects.toThrow(/timed out|within 20 ms/);
      expect(await q.get()).toBeNull();
    },
  },
  {
    name: 'a queue name starting with amq. is refused with 403',
    async run(session) {
      await expectAmqpError(
        session.queue(`amq.parity-${Date.now()}`, { durable: false }),
        403,
        /ACCESS_REFUSED - queue name 'amq\.parity-\d+' contains reserved prefix 'amq\.\*'/,
      );
    },
  },
  {
    name: 'redeclaring a queue differently fails with 406 naming the first argument in RabbitMQ order',
    async run(_session, ctx) {
      const q = await ctx.queue('redeclare', {
        durable: false,
        arguments: { 'x-message-ttl': 60000, 'x-max-length': 100, 'x-overflow': 'drop-head' },
      });
      const where = `for queue '${q.name}' in vhost '/'`;
      // Another connection: a session remembers the queues it declared and would not redeclare.
      const other = await ctx.connection();
      const redeclare = (args: Record<string, unknown>) =>
        other.queue(q.name, { durable: false, arguments: args });
      const same = { 'x-message-ttl': 60000, 'x-max-length': 100, 'x-overflow': 'drop-head' };
      // Both sides have the argument: the bare values.
      await expectAmqpError(
        redeclare({ ...same, 'x-message-ttl': 1000 }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' ${where}: received '1000' but current is '60000'`,
      );
      // x-max-length is checked before x-overflow; a value the queue would refuse is inequivalent.
      await expectAmqpError(
        redeclare({ ...same, 'x-max-length': 'many', 'x-overflow': 'reject-publish' }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'x-max-length' ${where}: received 'many' but current is '100'`,
      );
      // One side lacks it: the typed form.
      await expectAmqpError(
        redeclare({ ...same, 'x-dead-letter-exchange': 'dlx' }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'x-dead-letter-exchange' ${where}: received the value 'dlx' of type 'longstr' but current is none`,
      );
      await expectAmqpError(
        redeclare({ 'x-message-ttl': 60000, 'x-max-length': 100 }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'x-overflow' ${where}: received none but current is the value 'drop-head' of type 'longstr'`,
      );
      await expectAmqpError(
        redeclare({ ...same, 'x-queue-type': 'stream' }),
        406,
        `PRECONDITION_FAILED - inequivalent arg 'x-queue-type' ${where}: received the value 'stream' of type 'longstr' but current is none`,
      );
      // The classic type named or not is one; arguments RabbitMQ does not compare are ignored.
      await redeclare({ ...same, 'x-queue-type': 'classic', 'x-unknown': 1 });
    },
  },
  {
    name: 'a deleted queue is gone: its bindings no longer route',
    async run(session, ctx) {
      const q = await ctx.queue('deleted', { durable: false });
      const ex = await ctx.exchange('deleted-ex', 'fanout', { durable: false });
      await q.bind(ex.name);
      await q.publish('x');
      await q.delete();
      await ctx.expectUnroutable(() => ex.publish('y', { mandatory: true }));
      const again = await session.queue(q.name, { durable: false });
      expect(await again.get()).toBeNull();
    },
  },
  {
    name: 'queue.delete() reports the ready messages it deleted, not the unacked ones',
    async run(_session, ctx) {
      const q = await ctx.queue('delete-count', { durable: false });
      await publishAll(q, ['m1', 'm2']);
      await q.get({ noAck: false });
      expect(countOf(await q.delete())).toBe(1);
    },
  },
  {
    name: 'queue.delete({ ifEmpty }) looks at ready messages: unacked ones do not keep the queue',
    async run(_session, ctx) {
      const q = await ctx.queue('delete-if-empty', { durable: false });
      await q.publish('m1');
      await q.get({ noAck: false });
      expect(countOf(await q.delete({ ifEmpty: true }))).toBe(0);
    },
  },
  {
    name: "a deleted queue's handle: a publish is unroutable (dropped, 312 with mandatory), get is 404",
    async run(_session, ctx) {
      const q = await ctx.queue('deleted-handle', { durable: false });
      await q.delete();
      await q.publish('dropped');
      await ctx.expectUnroutable(() => q.publish('returned', { mandatory: true }));
      await expectAmqpError(q.get(), 404, /NOT_FOUND - no queue '.*' in vhost '\/'/);
    },
  },
  {
    name: 'pulled deliveries share one delivery-tag space across queues: multiple settles them all (on mqlite: those of one queue)',
    async run(_session, ctx) {
      const q0 = await ctx.queue('multiple-0', { durable: false });
      const q1 = await ctx.queue('multiple-1', { durable: false });
      await q0.publish('m2');
      await q1.publish('m1');
      const m2 = await q0.get({ noAck: false });
      const m1 = await q1.get({ noAck: false });
      await m1?.nack(true, true);
      expect(await drain(q1)).toEqual(['m1']);
      if (ctx.behaviour.multipleSpansQueues) {
        expect(await drain(q0)).toEqual(['m2']);
      } else {
        expect(await drain(q0)).toEqual([]);
        await m2?.ack();
      }
    },
  },
];
