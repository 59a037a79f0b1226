/**
 * The differential test tells the documented `x-death` order apart: it notes where RabbitMQ
 * 3.10's order would decide a dead letter's fate otherwise than mqlite's, and nowhere else.
 */
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { ClassicQueue } from '../../src/queues/classic/classic-queue.js';
import { afterDeath, closesCycle, DeathOrder } from './death-order.js';

function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const q0Rejected = { queue: 'q0', reason: 'rejected' };
const q0Full = { queue: 'q0', reason: 'maxlen' };
const q1Full = { queue: 'q1', reason: 'maxlen' };

describe('the x-death orders', () => {
  it('keep the older deaths in order, or reverse them as RabbitMQ 3.10 does', () => {
    const deaths = [q1Full, q0Rejected];
    expect(afterDeath(deaths, q0Full, false)).toEqual([q0Full, q1Full, q0Rejected]);
    expect(afterDeath(deaths, q0Full, true)).toEqual([q0Full, q0Rejected, q1Full]);
    // A death counted again moves its entry to the front.
    expect(afterDeath([q0Full, q1Full, q0Rejected], q1Full, false)).toEqual([
      q1Full,
      q0Full,
      q0Rejected,
    ]);
  });

  it('close a cycle at a queue that died the message since its last rejection', () => {
    expect(closesCycle([q0Full, q1Full, q0Rejected], 'q1')).toBe(true);
    expect(closesCycle([q0Full, q0Rejected, q1Full], 'q1')).toBe(false);
    expect(closesCycle([q0Rejected], 'q0')).toBe(false);
    expect(closesCycle([q0Full], 'q1')).toBe(false);
  });
});

describe('DeathOrder', () => {
  /** q0 refuses everything (dead-lettering to q1); q1 holds one (dropping its head to q0). */
  async function loop(broker: Broker): Promise<[ClassicQueue, ClassicQueue]> {
    const q0 = await broker.queue('q0', {
      arguments: {
        'x-max-length-bytes': 0,
        'x-overflow': 'reject-publish-dlx',
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'q1',
      },
    });
    const q1 = await broker.queue('q1', {
      arguments: {
        'x-max-length': 1,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'q0',
      },
    });
    return [q0 as ClassicQueue, q1 as ClassicQueue];
  }

  const targets = new Map([
    ['q0', 'q1'],
    ['q1', 'q0'],
  ]);

  it('notes a rejected message that RabbitMQ 3.10 would send on round a loop where mqlite drops it', async () => {
    await using broker = await Broker.open();
    const [, q1] = await loop(broker);
    const order = new DeathOrder(targets, (q) => q);
    try {
      await q1.publish('m');
      // Rejected in q1, refused by q0: back in q1, as on both brokers.
      await (await q1.get({ noAck: false }))!.nack(false);
      await tick();
      const m = (await q1.get({ noAck: false }))!;
      expect(m.bodyString()).toBe('m');
      expect(order.parted).toBeUndefined();
      await q1.publish('x');
      // Requeued behind nothing, m is q1's head: dropped to q0, it closes a cycle on mqlite only.
      await m.nack(true);
      await tick();
      expect(order.parted).toBe('m dead-lettered from q1 to q0: mqlite drops it as a cycle');
    } finally {
      order.close();
    }
  });

  it('notes nothing where both orders drop the same dead letters', async () => {
    await using broker = await Broker.open();
    const [q0, q1] = await loop(broker);
    const order = new DeathOrder(targets, (q) => q);
    try {
      // a goes q0 to q1; b pushes it out to q0, which refuses it: a cycle on both brokers.
      await q0.publish('a').catch(() => undefined);
      await q1.publish('b');
      await tick();
      expect((await q1.get())?.bodyString()).toBe('b');
      expect(order.parted).toBeUndefined();
    } finally {
      order.close();
    }
  });
});
