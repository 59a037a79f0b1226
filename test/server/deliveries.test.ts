/**
 * What a channel keeps of an unacknowledged delivery: enough to settle it, not the message. The
 * body is written to the socket once; holding it until the ack would cost a consumer that never
 * acks the whole of every message, and keep them alive after their queue is deleted.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Message } from '../../src/message/message.js';
import { ACK } from '../../src/queues/consumer.js';
import { Deliveries } from '../../src/server/deliveries.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Turns of the event loop with full collections between them, so weak references clear. */
async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
}

describe("a channel's unacknowledged deliveries", () => {
  test('keep no message alive, before or after its queue is deleted, and still settle', async () => {
    const broker = await Broker.open();
    const queue = await broker.queue('deliveries-unacked');
    for (let i = 0; i < 3; i++) await queue.publish(`message ${i}`);
    const deliveries = new Deliveries();
    const weak: WeakRef<Message>[] = [];
    const subscription = await queue.subscribe({ manualAck: true }, (message) => {
      deliveries.track(deliveries.nextTag(), message, undefined);
      weak.push(new WeakRef(message));
    });
    deliveries.subscribed(subscription);
    await collect();
    expect(weak).toHaveLength(3);
    expect(weak.filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
    expect(deliveries.unacked).toBe(3);
    deliveries.settle(1, false, ACK);
    expect(queue.stats().messages).toBe(2);

    await broker.deleteQueue('deliveries-unacked');
    // A delivery of a deleted queue settles as nothing, as on RabbitMQ.
    deliveries.settle(0, true, ACK);
    expect(deliveries.unacked).toBe(0);
    await broker.close();
  });
});
