/**
 * What a channel answers, in which order, over raw frames: on mqlite over memory and fs storage
 * and on the local RabbitMQ alike.
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { memoryStorage } from '../../src/storage/memory.js';
import { holdDeletes } from '../support/held-deletes.js';
import { TestStorage } from '../support/test-storage.js';
import { RawClient } from './raw-client.js';
import { consume, declareQueue, deleteQueue } from './raw-methods.js';
import { onlyMqlite } from './served.js';
import { storageTargets } from './wire-targets.js';

const targets = storageTargets();

const queueName = (label: string) => `mqlite-wire-chan-${label}-${randomBytes(4).toString('hex')}`;

/** The names of the methods received on channel 1 so far, in order. */
function methods(client: RawClient): string[] {
  return client.frames.filter((f) => f.channel === 1 && f.method).map((f) => f.method!.name);
}

describe.each(targets)('channel on $name', (target) => {
  test('deleting a queue the channel consumes answers delete-ok before the consumer’s cancel', async () => {
    const client = await RawClient.open(target.port);
    try {
      await client.openChannel(1);
      for (let i = 0; i < 20; i++) {
        const queue = queueName('delete-order');
        declareQueue(client, 1, queue);
        await client.method('queue.declare-ok', 1);
        consume(client, 1, queue, `c${i}`);
        await client.method('basic.consume-ok', 1);
        deleteQueue(client, 1, queue);
        await client.method('basic.cancel', 1);
        // Both arrived: the reply came first.
        expect(methods(client)).toEqual(['queue.delete-ok']);
        await client.method('queue.delete-ok', 1);
      }
    } finally {
      client.destroy();
    }
  });

  test('amqplib: deleteQueue resolves when the channel that consumes the queue closes on the cancel', async () => {
    // amqplib's own "cancelled consumer" test: the cancel ends the test, which closes the
    // channel; a delete-ok behind the cancel then never arrives.
    const connection = await amqplib.connect(`amqp://guest:guest@127.0.0.1:${target.port}`);
    try {
      let resolved = 0;
      for (let i = 0; i < 20; i++) {
        const channel = await connection.createChannel();
        const queue = queueName('amqplib-delete');
        await channel.assertQueue(queue, { durable: false });
        const cancelled = new Promise<void>((resolve) => {
          void channel.consume(queue, (message) => {
            if (message === null) resolve();
          });
        });
        const deleted = channel.deleteQueue(queue).then(() => resolved++);
        await cancelled;
        await channel.close();
        await deleted.catch(() => {});
      }
      expect(resolved).toBe(20);
    } finally {
      await connection.close();
    }
  });
});

/**
 * Go amqp091's TestIntegrationConsumeCancel: an auto-delete queue's only consumer gets a message
 * and cancels; the client publishes to the queue and deletes it at once. On mqlite the
 * auto-delete is held under way meanwhile; RabbitMQ runs it as fast as it goes.
 */
async function consumeCancelDelete(
  port: number,
  hold?: { waiting: () => Promise<void>; release: () => void },
): Promise<void> {
  const client = await RawClient.open(port);
  try {
    await client.openChannel(1);
    await client.openChannel(2);
    const queue = queueName('consume-cancel');
    declareQueue(client, 1, queue, { autoDelete: true });
    await client.method('queue.declare-ok', 1);
    consume(client, 1, queue, 'integration-tag');
    await client.method('basic.consume-ok', 1);
    client.publish(1, '', queue, '1');
    await client.method('basic.deliver', 1);
    client.sendMethod(1, 'basic.cancel', { consumerTag: 'integration-tag', nowait: false });
    await client.method('basic.cancel-ok', 1);
    await hold?.waiting();
    client.publish(1, '', queue, '2');
    deleteQueue(client, 1, queue);
    // Channel 2 answers once the server has read the publish and the delete before it.
    client.sendMethod(2, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
    await client.method('basic.qos-ok', 2);
    hold?.release();
    await client.method('queue.delete-ok', 1);
    // The connection and the channel go on.
    declareQueue(client, 1, queue);
    await client.method('queue.declare-ok', 1);
    deleteQueue(client, 1, queue);
    await client.method('queue.delete-ok', 1);
    expect(client.count((f) => /close/.test(f.method?.name ?? ''))).toBe(0);
  } finally {
    client.destroy();
  }
}

describe('an auto-delete queue deleted while a client publishes to it and deletes it', () => {
  test.each(['memory', 'fs'] as const)('mqlite (%s) answers delete-ok', async (kind) => {
    const storage = new TestStorage(kind);
    const held = holdDeletes(kind === 'memory' ? memoryStorage() : storage.storage);
    const broker = await Broker.open({ storage: held.storage });
    const server = await listen(broker);
    try {
      await consumeCancelDelete(server.port, held);
    } finally {
      held.release();
      await server.close();
      await broker.close();
      await storage.dispose();
    }
  });

  test.skipIf(onlyMqlite)('RabbitMQ answers delete-ok', async () => {
    await consumeCancelDelete(targets.at(-1)!.port);
  });
});
