/**
 * Single active consumer: the next consumer takes over from one that went only once the messages
 * it held are settled or returned, on every queue kind that has it.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import { LastValueQueue } from '../../../src/queues/lvq/last-value-queue.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import { collector, queuesPerTest, STORAGE_KINDS, settle } from './support.js';

const sac = { 'x-single-active-consumer': true };

describe.each(STORAGE_KINDS)('single active consumer hand-over on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  const kinds = {
    fifo: () => queues.fifo('q', { arguments: sac }),
    priority: () => queues.priority('q', 5, { arguments: sac }),
    lvq: async () => {
      const queue = await LastValueQueue.open({
        name: 'q',
        key: 'k',
        clock: new ManualClock(),
        storage: queues.storage.storage,
        arguments: sac,
      });
      queues.byName.set('q', queue);
      return queue;
    },
  };

  /** The active consumer holds m1 (prefetch 1), m2 and m3 wait; a second consumer waits. */
  async function held(make: () => Promise<Queue>) {
    const q = await make();
    const first = collector();
    const second = collector();
    const active = await q.subscribe({ prefetch: 1, manualAck: true }, first.callback);
    await q.subscribe({ prefetch: 10, manualAck: true }, second.callback);
    for (const [i, body] of ['m1', 'm2', 'm3'].entries()) {
      await q.publish(body, { headers: { k: `k${i}` } });
    }
    expect(first.bodies()).toEqual(['m1']);
    return { q, active, first, second };
  }

  type Queue = Awaited<ReturnType<(typeof kinds)[keyof typeof kinds]>>;
  const redelivered = (messages: Message[]) => messages.map((m) => [m.bodyString(), m.redelivered]);

  describe.each(Object.keys(kinds) as (keyof typeof kinds)[])('%s', (name) => {
    it('a consumer that cancels, then closes, hands over its unacked messages first', async () => {
      const { active, second } = await held(kinds[name]);
      await active.cancel();
      await settle();
      // m2 stood behind m1, which the cancelled consumer still holds.
      expect(second.bodies()).toEqual([]);
      await active.close();
      await settle();
      expect(redelivered(second.received)).toEqual([
        ['m1', true],
        ['m2', false],
        ['m3', false],
      ]);
    });

    it('a cancelled consumer that requeues hands its message over first', async () => {
      const { active, first, second } = await held(kinds[name]);
      await active.cancel();
      await first.received[0]!.nack(true);
      await settle();
      expect(second.bodies()).toEqual(['m1', 'm2', 'm3']);
    });

    it('a cancelled consumer that acks hands over the messages behind', async () => {
      const { active, first, second } = await held(kinds[name]);
      await active.cancel();
      await settle();
      expect(second.bodies()).toEqual([]);
      await first.received[0]!.ack();
      await settle();
      expect(second.bodies()).toEqual(['m2', 'm3']);
    });

    it('a consumer that holds nothing hands over at once', async () => {
      const q = await kinds[name]();
      const second = collector();
      const active = await q.subscribe({ prefetch: 1, manualAck: true }, () => {});
      await q.subscribe({ prefetch: 10, manualAck: true }, second.callback);
      await active.cancel();
      await q.publish('m1', { headers: { k: 'k1' } });
      await settle();
      expect(second.bodies()).toEqual(['m1']);
    });
  });
});
