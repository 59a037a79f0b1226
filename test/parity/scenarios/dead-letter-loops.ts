import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { holder, recorder } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

/** A message as `[body, x-death as queue-suffix/reason, newest first]`. */
function withDeaths(ctx: ParityContext, m: AMQPMessage): [string, string[]] {
  const deaths = (m.properties.headers?.['x-death'] ?? []) as Record<string, unknown>[];
  const prefix = ctx.name('');
  return [
    m.bodyString() ?? '',
    deaths.map((d) => `${String(d.queue).slice(prefix.length)}/${String(d.reason)}`),
  ];
}

/** Takes every ready message of `q` (no-ack), as `withDeaths` shows them. */
async function drainDeaths(ctx: ParityContext, q: ParityQueue): Promise<[string, string[]][]> {
  const got: [string, string[]][] = [];
  for (let m = await q.get({ noAck: true }); m; m = await q.get({ noAck: true })) {
    got.push(withDeaths(ctx, m));
  }
  return got;
}

/**
 * Length-limited queues dead-lettering round a loop through the default exchange: queue i is
 * named `loop-q<i>`, limited to `limits[i]` messages, and dead-letters to queue i + 1 (the last
 * to the first).
 */
async function loop(ctx: ParityContext, limits: number[]): Promise<ParityQueue[]> {
  const queues: ParityQueue[] = [];
  for (const [i, limit] of limits.entries()) {
    queues.push(
      await ctx.queue(`loop-q${i}`, {
        durable: false,
        arguments: {
          'x-max-length': limit,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': ctx.name(`loop-q${(i + 1) % limits.length}`),
        },
      }),
    );
  }
  return queues;
}

/** Where the loop of two ends on RabbitMQ: q0 empty, q1 holding m14 and m7 (dead in q0). */
async function expectM14M7(ctx: ParityContext, q0: ParityQueue, q1: ParityQueue): Promise<void> {
  expect(await drainDeaths(ctx, q0)).toEqual([]);
  expect(await drainDeaths(ctx, q1)).toEqual([
    ['m14', []],
    ['m7', ['loop-q0/maxlen']],
  ]);
}

export const deadLetterLoopScenarios: Scenario[] = [
  {
    name: 'a nack requeues into a loop of full queues: the head goes round once, to the consumer that has room',
    async run(_session, ctx) {
      const [q0, q1] = (await loop(ctx, [0, 2])) as [ParityQueue, ParityQueue];
      const c1 = await recorder(q0, { prefetch: 2 }, () => undefined);
      await q0.publish('m7');
      await c1.waitFor(1);
      await q1.publish('m13');
      await q1.publish('m14');
      await c1.received[0]!.nack(true);
      // m7 pushes m13 out of q1; m13 reaches q0, empty, whose consumer has room.
      await c1.waitFor(2, 'm13 dead-lettered round the loop to the consumer');
      expect(withDeaths(ctx, c1.received[1]!)).toEqual(['m13', ['loop-q1/maxlen']]);
      await c1.received[1]!.ack();
      await c1.cancel();
      await expectM14M7(ctx, q0, q1);
    },
  },
  {
    name: "a closing connection's requeue into a loop of full queues drops m7 into the full queue once",
    async run(_session, ctx) {
      const [q0, q1] = (await loop(ctx, [0, 2])) as [ParityQueue, ParityQueue];
      const c1 = await holder(ctx, q0, 2);
      await q0.publish('m7');
      await c1.waitFor(1);
      await q1.publish('m13');
      await q1.publish('m14');
      // Sees where the loop ends: m13 comes back to q0, empty, and goes to this consumer.
      const watcher = await recorder(q0, { prefetch: 1 }, () => undefined);
      await c1.stop();
      await watcher.waitFor(1, 'm13 dead-lettered round the loop');
      expect(watcher.received.map((m) => withDeaths(ctx, m))).toEqual([
        ['m13', ['loop-q1/maxlen']],
      ]);
      await watcher.received[0]!.ack();
      await watcher.cancel();
      await expectM14M7(ctx, q0, q1);
    },
  },
  {
    name: 'a requeue into a loop of three full queues pushes one head out of each',
    async run(_session, ctx) {
      const [q0, q1, q2] = (await loop(ctx, [0, 1, 1])) as [ParityQueue, ParityQueue, ParityQueue];
      await q1.publish('a');
      await q2.publish('b');
      const c1 = await recorder(q0, { prefetch: 1 }, () => undefined);
      await q0.publish('m');
      await c1.waitFor(1);
      await c1.received[0]!.nack(true);
      // m pushes a out of q1, a pushes b out of q2, and b reaches q0's consumer.
      await c1.waitFor(2, 'b dead-lettered round the loop to the consumer');
      expect(withDeaths(ctx, c1.received[1]!)).toEqual(['b', ['loop-q2/maxlen']]);
      await c1.received[1]!.ack();
      await c1.cancel();
      expect(await drainDeaths(ctx, q0)).toEqual([]);
      expect(await drainDeaths(ctx, q1)).toEqual([['m', ['loop-q0/maxlen']]]);
      expect(await drainDeaths(ctx, q2)).toEqual([['a', ['loop-q1/maxlen']]]);
    },
  },
  {
    name: 'a requeue delivers to a consumer with room before what it dead-letters round a loop comes back',
    async run(_session, ctx) {
      const [q0, q1] = (await loop(ctx, [1, 1])) as [ParityQueue, ParityQueue];
      await q1.publish('x');
      const c1 = await holder(ctx, q0, 2);
      await q0.publish('a');
      await q0.publish('b');
      await c1.waitFor(2);
      const c2 = await recorder(q0, { prefetch: 2 }, () => undefined);
      // a and b come back to q0, which holds one: a goes to q1, pushing x out to q0. q0 hands b
      // to c2 before x arrives, as a queue finishes a requeue before it takes a dead letter.
      await c1.stop();
      await c2.waitFor(2, 'b and then x');
      expect(c2.received.map((m) => [m.bodyString(), m.redelivered])).toEqual([
        ['b', true],
        ['x', false],
      ]);
      for (const m of c2.received) await m.ack();
      await c2.cancel();
      expect(await drainDeaths(ctx, q0)).toEqual([]);
      expect(await drainDeaths(ctx, q1)).toEqual([['a', ['loop-q0/maxlen']]]);
    },
  },
];
