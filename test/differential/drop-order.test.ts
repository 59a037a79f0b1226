/**
 * The differential test tells the documented drop-head dead-letter order apart: it gives a DLQ in
 * RabbitMQ 3.10's order only where one change dropped several messages from a quorum queue.
 */
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { DropOrder } from './drop-order.js';

describe('DropOrder', () => {
  it('reverses the dead letters one change dropped from a quorum queue, and no others', async () => {
    await using broker = await Broker.open();
    const dlq = await broker.queue('dlq');
    const args = { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'dlq' };
    const quorum = await broker.queue('quorum', {
      arguments: { ...args, 'x-queue-type': 'quorum', 'x-max-length-bytes': 2 },
    });
    const classic = await broker.queue('classic', { arguments: { ...args, 'x-max-length': 0 } });
    const order = new DropOrder(['quorum']);
    try {
      await quorum.publish('a');
      await quorum.publish('bcd');
      await quorum.publish('e');
      await quorum.publish('fg');
      await quorum.publish('h');
      await classic.publish('i');
      const bodies: string[] = [];
      for (let m = await dlq.get(); m; m = await dlq.get()) bodies.push(m.bodyString() ?? '');
      // a and bcd went with one publish; e with fg's, fg with h's; i is a classic queue's.
      expect(bodies).toEqual(['a', 'bcd', 'e', 'fg', 'i']);
      expect(order.as310(bodies)?.map((i) => bodies[i])).toEqual(['bcd', 'a', 'e', 'fg', 'i']);
      expect(order.as310(['e', 'fg', 'i'])).toBeUndefined();
    } finally {
      order.close();
    }
  });
});
