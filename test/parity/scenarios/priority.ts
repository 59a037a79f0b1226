import { expect } from 'vitest';
import { drain } from '../helpers.js';
import type { Scenario } from '../types.js';

/** Publishes `[body, priority]` pairs in order (priority undefined: no priority property). */
export async function publishWithPriorities(
  q: { publish(body: unknown, options?: { priority?: number }): Promise<unknown> },
  messages: readonly [string, number | undefined][],
) {
  for (const [body, priority] of messages) {
    await q.publish(body, priority === undefined ? {} : { priority });
  }
}

export const priorityScenarios: Scenario[] = [
  {
    name: 'a priority queue delivers higher priorities first, FIFO within a priority',
    async run(_session, ctx) {
      const q = await ctx.queue('prio', { durable: false, arguments: { 'x-max-priority': 9 } });
      await publishWithPriorities(q, [
        ['none-1', undefined],
        ['p1', 1],
        ['p5-a', 5],
        ['p3', 3],
        ['p5-b', 5],
        ['p0', 0],
        ['none-2', undefined],
        ['p9', 9],
      ]);
      expect(await drain(q)).toEqual(['p9', 'p5-a', 'p5-b', 'p3', 'p1', 'none-1', 'p0', 'none-2']);
    },
  },
  {
    name: 'a priority above x-max-priority counts as the maximum',
    async run(_session, ctx) {
      const q = await ctx.queue('cap', { durable: false, arguments: { 'x-max-priority': 3 } });
      await publishWithPriorities(q, [
        ['p2', 2],
        ['p3', 3],
        ['p200', 200],
        ['p4', 4],
        ['p3-b', 3],
      ]);
      expect(await drain(q)).toEqual(['p3', 'p200', 'p4', 'p3-b', 'p2']);
    },
  },
  {
    name: 'a requeued message goes back ahead of its priority, redelivered, keeping its priority',
    async run(_session, ctx) {
      const q = await ctx.queue('prio-requeue', {
        durable: false,
        arguments: { 'x-max-priority': 5 },
      });
      await publishWithPriorities(q, [
        ['low', 1],
        ['high-a', 5],
        ['high-b', 5],
      ]);
      const first = await q.get({ noAck: false });
      const second = await q.get({ noAck: false });
      expect([first?.bodyString(), second?.bodyString()]).toEqual(['high-a', 'high-b']);
      await second?.nack(true);
      await first?.nack(true);
      await q.publish('high-c', { priority: 5 });
      const order = [];
      for (let m = await q.get(); m; m = await q.get()) {
        order.push([m.bodyString(), m.redelivered, m.properties.priority]);
      }
      expect(order).toEqual([
        ['high-a', true, 5],
        ['high-b', true, 5],
        ['high-c', false, 5],
        ['low', false, 1],
      ]);
    },
  },
];
