import type { AMQPMessage } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import { eventually, recorder, settled } from '../helpers.js';
import type { ParityContext, ParityQueue, Scenario } from '../types.js';

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

/** Which consumer gets a dead letter that comes back to its queue. */
export const deadLetterConsumerScenarios: Scenario[] = [
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
