/**
 * What a channel answers, in which order, over raw frames: on mqlite over memory and fs storage
 * and on the local RabbitMQ alike.
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { describe, expect, test } from 'vitest';
import { RawClient } from './raw-client.js';
import { storageTargets } from './wire-targets.js';

const targets = storageTargets();

const queueName = (label: string) => `mqlite-wire-chan-${label}-${randomBytes(4).toString('hex')}`;

function declare(client: RawClient, queue: string, flags: { autoDelete?: boolean } = {}): void {
  client.sendMethod(1, 'queue.declare', {
    reserved1: 0,
    queue,
    passive: false,
    durable: false,
    exclusive: false,
    autoDelete: flags.autoDelete ?? false,
    nowait: false,
    arguments: {},
  });
}

function consume(client: RawClient, queue: string, consumerTag: string): void {
  client.sendMethod(1, 'basic.consume', {
    reserved1: 0,
    queue,
    consumerTag,
    noLocal: false,
    noAck: false,
    exclusive: false,
    nowait: false,
    arguments: {},
  });
}

function deleteQueue(client: RawClient, queue: string): void {
  client.sendMethod(1, 'queue.delete', {
    reserved1: 0,
    queue,
    ifUnused: false,
    ifEmpty: false,
    nowait: false,
  });
}

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
        declare(client, queue);
        await client.method('queue.declare-ok', 1);
        consume(client, queue, `c${i}`);
        await client.method('basic.consume-ok', 1);
        deleteQueue(client, queue);
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
