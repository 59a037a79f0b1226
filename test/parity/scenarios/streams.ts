import { expect } from 'vitest';
import { expectAmqpError, publishAll, recorder } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

/** Declares a stream under a throwaway name. */
export async function stream(ctx: ParityContext, suffix: string): Promise<ParityQueue> {
  return ctx.queue(suffix, { durable: true, arguments: { 'x-queue-type': 'stream' } });
}

/** Subscribes from `offset` and returns the recorder once it has `n` deliveries. */
async function readFrom(q: ParityQueue, offset: unknown, n: number) {
  const rec = await recorder(q, { prefetch: 100, args: { 'x-stream-offset': offset } });
  await rec.waitFor(n, `${n} stream deliveries from ${String(offset)}`);
  return rec;
}

export const streamScenarios: Scenario[] = [
  {
    name: "a stream consumer from 'first' reads every message with its offset, and reading removes nothing",
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-first');
      await publishAll(q, ['m1', 'm2', 'm3']);
      const a = await readFrom(q, 'first', 3);
      expect(a.bodies()).toEqual(['m1', 'm2', 'm3']);
      expect(a.received.map((m) => m.properties.headers?.['x-stream-offset'])).toEqual([
        ctx.streamOffset(1),
        ctx.streamOffset(2),
        ctx.streamOffset(3),
      ]);
      await a.cancel();
      const again = await readFrom(q, 'first', 3);
      expect(again.bodies()).toEqual(['m1', 'm2', 'm3']);
      await again.cancel();
    },
  },
  {
    name: 'independent stream consumers each read the whole stream',
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-independent-read');
      await publishAll(q, ['m1', 'm2', 'm3']);
      const a = await readFrom(q, 'first', 3);
      const b = await readFrom(q, 'first', 3);
      expect([a.bodies(), b.bodies()]).toEqual([
        ['m1', 'm2', 'm3'],
        ['m1', 'm2', 'm3'],
      ]);
      await a.cancel();
      await b.cancel();
    },
  },
  {
    name: 'stream consumers waiting at the end of a stream each get every new message at once',
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-independent-live');
      const a = await recorder(q, { prefetch: 100, args: { 'x-stream-offset': 'first' } });
      const b = await recorder(q, { prefetch: 100, args: { 'x-stream-offset': 'first' } });
      await publishAll(q, ['m1', 'm2', 'm3']);
      await a.waitFor(3);
      await b.waitFor(3);
      expect([a.bodies(), b.bodies()]).toEqual([
        ['m1', 'm2', 'm3'],
        ['m1', 'm2', 'm3'],
      ]);
      await a.cancel();
      await b.cancel();
    },
  },
  {
    name: "a stream consumer from 'next' sees only messages published after it attached",
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-next');
      await publishAll(q, ['old-1', 'old-2']);
      const rec = await recorder(q, { prefetch: 100, args: { 'x-stream-offset': 'next' } });
      await publishAll(q, ['new-1', 'new-2']);
      await rec.waitFor(2);
      expect(rec.bodies()).toEqual(['new-1', 'new-2']);
      expect(rec.received[0]?.properties.headers?.['x-stream-offset']).toBe(ctx.streamOffset(3));
      await rec.cancel();
    },
  },
  {
    name: 'a stream consumer from an absolute offset starts at that message',
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-offset');
      await publishAll(q, ['m1', 'm2', 'm3', 'm4']);
      const rec = await readFrom(q, ctx.streamOffset(3), 2);
      expect(rec.bodies()).toEqual(['m3', 'm4']);
      await rec.cancel();
    },
  },
  {
    name: 'a stream consumer from a timestamp starts at the first message at or after it',
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-time');
      await publishAll(q, ['m1', 'm2']);
      const past = await readFrom(q, new Date(Date.now() - 3600_000), 2);
      expect(past.bodies()).toEqual(['m1', 'm2']);
      await past.cancel();
      const future = await recorder(q, {
        prefetch: 100,
        args: { 'x-stream-offset': new Date(Date.now() + 3600_000) },
      });
      await publishAll(q, ['m3']);
      await future.waitFor(1);
      expect(future.bodies()).toEqual(['m3']);
      await future.cancel();
    },
  },
  {
    name: 'a stream refuses basic.get with 540 (RabbitMQ then closes the connection; an mqlite session goes on working)',
    async run(_session, ctx) {
      const q = await stream(ctx, 'stream-get');
      await q.publish('m1');
      await expectAmqpError(q.get({ noAck: false }), 540);
      if (ctx.behaviour.notImplementedClosesConnection) return;
      await q.publish('m2');
      const rec = await readFrom(q, 'first', 2);
      expect(rec.bodies()).toEqual(['m1', 'm2']);
      await rec.cancel();
    },
  },
];
