import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { eventually, recorder, settled } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

/** A message as `body queue-suffix/reason…`, its x-death newest first; byte-limit reasons as maxlen. */
function show(ctx: ParityContext, m: AMQPMessage): string {
  const deaths = (m.properties.headers?.['x-death'] ?? []) as Record<string, unknown>[];
  const prefix = ctx.name('').length;
  const reason = (r: unknown) => (r === 'maxlenbytes' ? 'maxlen' : String(r));
  return [
    m.bodyString(),
    ...deaths.map((d) => `${String(d.queue).slice(prefix)}/${reason(d.reason)}`),
  ].join(' ');
}

/** Takes every ready message of `q` (no-ack), as `show` shows them. */
async function drainShown(ctx: ParityContext, q: ParityQueue): Promise<string[]> {
  const got: string[] = [];
  for (let m = await q.get({ noAck: true }); m; m = await q.get({ noAck: true })) {
    got.push(show(ctx, m));
  }
  return got;
}

/**
 * A queue dead-lettering through a fanout to `target` and to a `watch` queue that sees every
 * dead letter it sends (the watch queue never dies, so it takes no part in the cycle rule).
 */
async function watched(
  ctx: ParityContext,
  suffix: string,
  target: string,
  args: Record<string, unknown>,
): Promise<{ q: ParityQueue; watch: ParityQueue }> {
  const fan = await ctx.exchange(`${suffix}-dlx`, 'fanout', { durable: false });
  const watch = await ctx.queue(`${suffix}-watch`, { durable: false });
  await watch.bind(fan.name);
  const to = await ctx.queue(target, { passive: true });
  await to.bind(fan.name);
  const q = await ctx.queue(suffix, {
    durable: false,
    arguments: { ...args, 'x-dead-letter-exchange': fan.name },
  });
  return { q, watch };
}

/** Waits until `watch` holds `n` messages and returns them, drained. */
async function watchedN(ctx: ParityContext, watch: ParityQueue, n: number): Promise<string[]> {
  const seen: string[] = [];
  await eventually(
    async () => {
      seen.push(...(await drainShown(ctx, watch)));
      return seen.length;
    },
    (count) => count >= n,
    `${n} dead letters seen`,
  );
  return seen;
}

/** Declares queue `suffix` with `args`, dead-lettering to queue `target` by the default exchange. */
function deadLettering(
  ctx: ParityContext,
  suffix: string,
  target: string,
  args: Record<string, unknown>,
): Promise<ParityQueue> {
  const dlx = { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': ctx.name(target) };
  return ctx.queue(suffix, { durable: false, arguments: { ...args, ...dlx } });
}

export const deadLetterCycleScenarios: Scenario[] = [
  {
    name: 'x-death is rewritten in reverse behind the newest entry, so a message rejected into a loop comes back after a drop-head',
    async run(_session, ctx) {
      const q0 = await deadLettering(ctx, 'cyc-q0', 'cyc-q1', {
        'x-max-length-bytes': 0,
        'x-overflow': 'reject-publish-dlx',
      });
      const { q: q1, watch } = await watched(ctx, 'cyc-q1', 'cyc-q0', { 'x-max-length': 1 });
      await expect(q0.publish('m0')).rejects.toThrow();
      const m0 = await eventually(() => q1.get({ noAck: false }), Boolean, 'm0 in q1');
      await m0!.nack(false);
      await expect(q0.publish('m1')).rejects.toThrow();
      // q1 dead-letters m0 (rejected), m0 (pushed out by m1) and m1 (pushed out by m0's return).
      expect(await watchedN(ctx, watch, 3)).toEqual([
        'm0 cyc-q1/rejected cyc-q0/maxlen',
        'm0 cyc-q1/maxlen cyc-q1/rejected cyc-q0/maxlen',
        'm1 cyc-q1/maxlen cyc-q0/maxlen',
      ]);
      expect(await drainShown(ctx, q1)).toEqual(['m0 cyc-q0/maxlen cyc-q1/rejected cyc-q1/maxlen']);
      expect(await drainShown(ctx, q0)).toEqual([]);
    },
  },
  {
    name: 'a message rejected in a loop of three is dropped where it died by a limit with no rejection since',
    async run(_session, ctx) {
      await deadLettering(ctx, 'tri-q1', 'tri-q2', { 'x-max-length': 0 });
      const q2 = await deadLettering(ctx, 'tri-q2', 'tri-q0', {
        'x-max-length': 2,
        'x-max-length-bytes': 7,
      });
      const { q: q0, watch } = await watched(ctx, 'tri-q0', 'tri-q1', {
        'x-max-length': 0,
        'x-max-length-bytes': 5,
        'x-overflow': 'reject-publish-dlx',
      });
      const c = await recorder(q2, { prefetch: 1 }, (m) =>
        c.received.length === 1 ? m.reject(false) : m.ack(),
      );
      await expect(q0.publish('m0')).rejects.toThrow();
      // q0 refuses m0 twice: published, and back from q2's consumer. The second goes no further:
      // its x-death reads q0, q1 (no rejection between), so q1 closes a cycle.
      expect(await watchedN(ctx, watch, 2)).toEqual([
        'm0 tri-q0/maxlen',
        'm0 tri-q0/maxlen tri-q1/maxlen tri-q2/rejected',
      ]);
      await settled(c.received[0]!);
      expect(c.received.map((m) => show(ctx, m))).toEqual(['m0 tri-q1/maxlen tri-q0/maxlen']);
      await c.cancel();
      expect(await drainShown(ctx, q2)).toEqual([]);
    },
  },
  {
    name: 'a consumer freed by a reject rejoins the line before what the reject dead-letters comes back',
    async run(_session, ctx) {
      const q1 = await deadLettering(ctx, 'rr-q1', 'rr-q0', {
        'x-max-length': 1,
        'x-overflow': 'reject-publish-dlx',
      });
      const q0 = await deadLettering(ctx, 'rr-q0', 'rr-q1', {
        'x-max-length': 2,
        'x-max-length-bytes': 8,
      });
      const got: string[] = [];
      const hold = (tag: string) => (m: AMQPMessage) => {
        got.push(`${tag} ${m.bodyString()}`);
      };
      const c0 = await recorder(q1, { prefetch: 1 }, hold('c0'));
      await q0.publish('m0');
      await q0.publish('m1');
      await q0.publish('m2');
      await c0.waitFor(1, 'm0, pushed out of rr-q0, to c0');
      const c1 = await recorder(q1, { prefetch: 2 }, hold('c1'));
      await q0.publish('m3');
      await c1.waitFor(1, 'm1 to c1 (c0 is full)');
      await c1.received[0]!.ack();
      await settled(c1.received[0]!);
      // m0 goes back to rr-q0 and pushes m2 out to rr-q1: c1 is first in line, then c0.
      await c0.received[0]!.reject(false);
      await c1.waitFor(2, 'm2 to c1');
      await q0.publish('m4');
      await eventually(
        () => got.length,
        (n) => n >= 4,
        'm3 delivered',
      );
      expect(got).toEqual(['c0 m0', 'c1 m1', 'c1 m2', 'c0 m3']);
      await c0.cancel();
      await c1.cancel();
    },
  },
];
