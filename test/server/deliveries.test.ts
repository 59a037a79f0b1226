/**
 * What a channel keeps of an unacknowledged delivery: enough to settle it, not the message. The
 * body is written to the socket once; holding it until the ack would cost a consumer that never
 * acks the whole of every message, and keep them alive after their queue is deleted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import amqplib from 'amqplib';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Message } from '../../src/message/message.js';
import { ACK } from '../../src/queues/consumer.js';
import { Deliveries } from '../../src/server/deliveries.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';

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

describe('a consumer that never acks, over the wire', () => {
  test('gets every message once, then a cancel and no message when its queue is deleted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-deliveries-'));
    const broker = await Broker.open({ storage: fsStorage({ dir }) });
    const server = await listen(broker);
    const consumer = await amqplib.connect(server.url);
    const publisher = await amqplib.connect(server.url);
    try {
      const consuming = await consumer.createChannel();
      await consuming.assertQueue('deliveries-never-acked', { durable: true });
      const count = 3000;
      const seen = new Array<number>(count).fill(0);
      let delivered = 0;
      let allDelivered!: () => void;
      const all = new Promise<void>((resolve) => (allDelivered = resolve));
      let cancelled!: () => void;
      const cancel = new Promise<void>((resolve) => (cancelled = resolve));
      // Prefetch 0: the server delivers the whole queue unacked.
      await consuming.consume('deliveries-never-acked', (message) => {
        if (!message) return cancelled();
        seen[message.content.readUInt32BE(0)]!++;
        if (++delivered === count) allDelivered();
      });
      const publishing = await publisher.createConfirmChannel();
      for (let sent = 0; sent < count; ) {
        for (const end = Math.min(count, sent + 500); sent < end; sent++) {
          const body = Buffer.alloc(100);
          body.writeUInt32BE(sent);
          publishing.sendToQueue('deliveries-never-acked', body, { persistent: true });
        }
        await publishing.waitForConfirms();
      }
      await all;
      await publishing.deleteQueue('deliveries-never-acked');
      await cancel;
      expect(delivered).toBe(count);
      expect(seen.filter((times) => times !== 1)).toEqual([]);
    } finally {
      await publisher.close();
      await consumer.close();
      await server.close();
      await broker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
