import { expect } from 'vitest';
import { drain, eventually, expectAmqpError, publishAll, recorder } from '../helpers.js';
import type { Scenario } from '../types.js';
import { stream } from './streams.js';

const LAVINMQ = 'mqlite follows LavinMQ here, where RabbitMQ 3.10 differs';

/** `x-max-length` on streams follows LavinMQ: RabbitMQ 3.10 refuses it. */
const STREAM_MAX_LENGTH = {
  targets: ['mqlite', 'mqlite-wire', 'lavinmq'],
  reason: 'x-max-length on streams is a LavinMQ feature: RabbitMQ 3.10 refuses it',
};

/** Stream and geo filters follow LavinMQ: RabbitMQ 3.10 has none. */
const STREAM_FILTERS = {
  targets: ['mqlite', 'mqlite-wire', 'lavinmq'],
  reason: 'stream filters follow LavinMQ; RabbitMQ 3.10 has none',
};

export const mqliteOnlyScenarios: Scenario[] = [
  {
    name: 'redeclaring a stream with another x-max-length fails with 406, as LavinMQ compares it',
    only: STREAM_MAX_LENGTH,
    async run(_session, ctx) {
      const declare = { durable: true, arguments: { 'x-queue-type': 'stream', 'x-max-length': 5 } };
      const q = await ctx.queue('stream-max-length-redeclare', declare);
      // Another connection: a session remembers the queues it declared and would not redeclare.
      const other = await ctx.connection();
      const redeclare = (maxLength: number | undefined) =>
        other.queue(q.name, {
          durable: true,
          arguments: { 'x-queue-type': 'stream', 'x-max-length': maxLength },
        });
      // LavinMQ words every difference alike, naming no argument.
      const text = (why: string) =>
        ctx.target === 'lavinmq'
          ? `PRECONDITION_FAILED - Existing queue '${q.name}' declared with other arguments`
          : `PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue '${q.name}' in vhost '/': ${why}`;
      await expectAmqpError(redeclare(6), 406, text("received '6' but current is '5'"));
      await expectAmqpError(
        redeclare(undefined),
        406,
        text("received none but current is the value '5' of type 'signedint'"),
      );
      await other.queue(q.name, declare);
    },
  },
  {
    name: 'a stream takes a length limit beyond 2^53 and LVQ arguments, which it ignores',
    only: STREAM_MAX_LENGTH,
    async run(_session, ctx) {
      const q = await ctx.queue('stream-lenient', {
        durable: true,
        arguments: {
          'x-queue-type': 'stream',
          'x-max-length': 2 ** 60,
          'x-max-length-bytes': 2 ** 60,
          'qpid.last_value_queue_key': 'k',
        },
      });
      await q.publish('a', { headers: { k: 1 } });
      await q.publish('b', { headers: { k: 1 } });
      const rec = await recorder(q, { prefetch: 10, args: { 'x-stream-offset': 'first' } });
      await rec.waitFor(2, 'both messages of one key');
      expect(rec.bodies()).toEqual(['a', 'b']);
      await rec.cancel();
    },
  },
  {
    name: 'a stream consumer whose x-stream-filter filters nothing ({}, [], null) gets every message',
    only: STREAM_FILTERS,
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-empty-filter');
      await publishAll(q, ['plain']);
      await q.publish('red', { headers: { 'x-stream-filter-value': 'red' } });
      for (const empty of [{}, [], null]) {
        const rec = await recorder(q, {
          prefetch: 10,
          args: { 'x-stream-offset': 'first', 'x-stream-filter': empty },
        });
        await rec.waitFor(2, `every message through ${JSON.stringify(empty)}`);
        expect(rec.bodies()).toEqual(['plain', 'red']);
        await rec.cancel();
      }
    },
  },
  {
    name: 'a publish whose geo headers no filter could match is stored, and matches no geo filter',
    only: STREAM_FILTERS,
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-bad-geo');
      const published = [
        { 'x-geo-lat': 'north', 'x-geo-lon': 10 },
        { 'x-geo-lat': 95, 'x-geo-lon': 10 },
        { 'x-geo-lat': 10, 'x-geo-lon': -180.5 },
        { 'x-geo-lat': 10, 'x-geo-lon': 10 },
      ];
      for (const [i, headers] of published.entries()) await q.publish(`m${i}`, { headers });
      const box = { min_lat: -90, max_lat: 90, min_lon: -180, max_lon: 180 };
      const geo = await recorder(q, {
        prefetch: 10,
        args: { 'x-stream-offset': 'first', 'x-stream-filter': { 'geo-bbox': box } },
      });
      // A stream delivers in order: the last message's arrival means the others were passed over.
      await geo.waitFor(1, 'the message with usable coordinates');
      expect(geo.bodies()).toEqual(['m3']);
      await geo.cancel();
      const all = await recorder(q, { prefetch: 10, args: { 'x-stream-offset': 'first' } });
      await all.waitFor(4, 'every stored message');
      expect(all.bodies()).toEqual(['m0', 'm1', 'm2', 'm3']);
      await all.cancel();
    },
  },
  {
    name: 'a requeued stream message comes again to the same consumer first, redelivered, same offset',
    only: {
      targets: ['mqlite', 'lavinmq'],
      reason:
        'stream requeue: RabbitMQ 3.10 re-reads the stream from the nacked offset about 1 s later, every later message again and redelivered false; mqlite follows LavinMQ',
    },
    async run(_session, ctx) {
      const q = await ctx.queue('stream-requeue', {
        durable: true,
        arguments: { 'x-queue-type': 'stream' },
      });
      await publishAll(q, ['m1', 'm2']);
      let first = true;
      const rec = await recorder(q, { prefetch: 1, args: { 'x-stream-offset': 'first' } }, (m) => {
        const requeue = first;
        first = false;
        return requeue ? m.nack(true) : m.ack();
      });
      await rec.waitFor(3);
      expect(
        rec.received.map((m) => [
          m.bodyString(),
          m.redelivered,
          m.properties.headers?.['x-stream-offset'],
        ]),
      ).toEqual([
        ['m1', false, ctx.streamOffset(1)],
        ['m1', true, ctx.streamOffset(1)],
        ['m2', false, ctx.streamOffset(2)],
      ]);
      await rec.cancel();
    },
  },
  {
    name: 'a last-value queue keeps only the newest message per key, moving it to the tail',
    only: {
      targets: ['mqlite'],
      reason: 'last-value queues follow the Qpid broker; RabbitMQ has none',
    },
    async run(_session, ctx) {
      const q = await ctx.queue('lvq', {
        durable: false,
        arguments: { 'qpid.last_value_queue_key': 'key' },
      });
      for (const key of [1, 2, 3, 4, 2, 1]) await q.publish(`k${key}`, { headers: { key } });
      await q.publish('no-key');
      expect(await drain(q)).toEqual(['k3', 'k4', 'k2', 'k1', 'no-key']);
    },
  },
  {
    name: 'a stream consumer from a negative offset -k gets the last k messages',
    only: {
      targets: ['mqlite'],
      reason: `negative stream offsets: ${LAVINMQ}, as its documentation says; the 2.9.1 release starts at the first message`,
    },
    async run(_session, ctx) {
      const q = await ctx.queue('stream-negative', {
        durable: true,
        arguments: { 'x-queue-type': 'stream' },
      });
      await publishAll(q, ['m1', 'm2', 'm3', 'm4']);
      const rec = await recorder(q, { prefetch: 100, args: { 'x-stream-offset': -2 } });
      await rec.waitFor(2);
      expect(rec.bodies()).toEqual(['m3', 'm4']);
      await rec.cancel();
    },
  },
  {
    name: 'a message requeued more than x-delivery-limit times is dead-lettered as delivery_limit',
    only: {
      targets: ['mqlite'],
      reason: 'RabbitMQ 3.10 honours x-delivery-limit on quorum queues only, not on classic queues',
    },
    async run(_session, ctx) {
      const dlq = await ctx.queue('limit-dlq', { durable: false });
      const q = await ctx.queue('limit', {
        durable: false,
        arguments: {
          'x-delivery-limit': 1,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': dlq.name,
        },
      });
      await q.publish('x');
      await (await q.get({ noAck: false }))?.nack(true);
      await (await q.get({ noAck: false }))?.nack(true);
      expect(await q.get()).toBeNull();
      // Dead-lettering is asynchronous: wait for the copy rather than assume when it lands.
      const dead = await eventually(
        () => dlq.get(),
        (m) => m !== null,
        'the dead letter',
      );
      expect(dead?.properties.headers?.['x-first-death-reason']).toBe('delivery_limit');
    },
  },
];
