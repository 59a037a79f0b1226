/**
 * Quorum queues as an amqplib application sees them over the wire, against mqlite's server and
 * the local RabbitMQ: `x-delivery-count` on redeliveries, and global QoS refused. Names are unique
 * per run and deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import amqplib, { type ConsumeMessage } from 'amqplib';
import { describe, expect, test } from 'vitest';
import { servedBroker, wireTargets } from './served.js';

const targets = wireTargets(servedBroker());
const QUORUM = { 'x-queue-type': 'quorum' };

/** Polls `read` until it passes `done`, with a generous deadline. */
async function until<T>(read: () => T, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting, last value ${String(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(targets)('quorum queues over amqplib against $name', (target) => {
  const name = (label: string) => `quorum-wire-${label}-${randomBytes(4).toString('hex')}`;

  test('consumers get x-delivery-count on redeliveries only; basic.get always has it', async () => {
    const connection = await amqplib.connect(target.url());
    try {
      const channel = await connection.createChannel();
      const queue = name('count');
      await channel.assertQueue(queue, { arguments: QUORUM });
      try {
        channel.sendToQueue(queue, Buffer.from('a'));
        const seen: ConsumeMessage[] = [];
        const { consumerTag } = await channel.consume(queue, (m) => {
          if (!m) return;
          seen.push(m);
          if (seen.length === 1) channel.nack(m, false, true);
          else channel.ack(m);
        });
        await until(
          () => seen.length,
          (n) => n === 2,
        );
        await channel.cancel(consumerTag);
        expect(seen.map((m) => [m.fields.redelivered, m.properties.headers])).toEqual([
          [false, {}],
          [true, { 'x-delivery-count': 1 }],
        ]);
        channel.sendToQueue(queue, Buffer.from('b'));
        let first: amqplib.GetMessage | false = false;
        for (const deadline = Date.now() + 15_000; !first && Date.now() < deadline; ) {
          first = await channel.get(queue, { noAck: true });
        }
        if (!first) throw new Error('the queue stayed empty');
        expect(first.properties.headers).toEqual({ 'x-delivery-count': 0 });
      } finally {
        await channel.deleteQueue(queue);
      }
    } finally {
      await connection.close();
    }
  });

  test('consuming from a quorum queue on a channel with global QoS is 540 NOT_IMPLEMENTED', async () => {
    const queue = name('global');
    const setup = await amqplib.connect(target.url());
    const admin = await setup.createChannel();
    await admin.assertQueue(queue, { arguments: QUORUM });
    try {
      const connection = await amqplib.connect(target.url());
      const closed = new Promise<Error>((resolve) => connection.on('error', resolve));
      const channel = await connection.createChannel();
      channel.on('error', () => {});
      await channel.prefetch(5, true);
      await expect(channel.consume(queue, () => {})).rejects.toThrow();
      const error = await closed;
      expect(error.message).toContain(
        `NOT_IMPLEMENTED - queue '${queue}' in vhost '/' does not support global qos`,
      );
    } finally {
      await admin.deleteQueue(queue);
      await setup.close();
    }
  });
});
