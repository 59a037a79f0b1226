import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../../src/errors.js';
import { Queue } from '../../../src/queues/priority-queue.js';
import { drain, queuesPerTest, STORAGE_KINDS, settle, toDlq } from './support.js';

describe.each(STORAGE_KINDS)('dead-lettering on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('sends a rejected message on with the x-death history RabbitMQ writes', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('work', { arguments: toDlq });
    const publishedAt = queues.clock.now();
    await q.publish('job', { expiration: '60000', messageId: 'm1', headers: { app: 'x' } });
    queues.clock.advance(10);
    await (await q.get({ noAck: false }))!.reject();
    await settle();
    const dead = (await dlq.get())!;
    expect(dead.bodyString()).toBe('job');
    expect(dead.exchange).toBe('');
    expect(dead.routingKey).toBe('dlq');
    expect(dead.properties.expiration).toBeUndefined();
    expect(dead.properties.messageId).toBe('m1');
    const headers = dead.properties.headers!;
    expect(headers.app).toBe('x');
    expect(headers['x-death']).toEqual([
      {
        count: 1,
        reason: 'rejected',
        queue: 'work',
        time: new Date(publishedAt), // whole seconds, as AMQP timestamps are
        exchange: '',
        'routing-keys': ['work'],
        'original-expiration': '60000',
      },
    ]);
    expect(headers['x-first-death-reason']).toBe('rejected');
    expect(headers['x-first-death-queue']).toBe('work');
    expect(headers['x-first-death-exchange']).toBe('');
  });

  it('uses the message routing key when no dead-letter routing key is set', async () => {
    const q = await queues.fifo('self-named', { arguments: { 'x-dead-letter-exchange': '' } });
    await q.publish('a');
    await (await q.get({ noAck: false }))!.nack(false);
    await settle();
    // Routed back to its own queue by its routing key: a rejection cycle continues.
    const again = (await q.get())!;
    expect(again.bodyString()).toBe('a');
    expect(again.properties.headers?.['x-death']).toMatchObject([{ reason: 'rejected', count: 1 }]);
  });

  it('counts repeated deaths per queue and reason, newest first', async () => {
    const q = await queues.fifo('loop', { arguments: { 'x-dead-letter-exchange': '' } });
    const other = await queues.fifo('other', {
      arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'loop' },
    });
    await q.publish('m');
    await (await q.get({ noAck: false }))!.reject();
    await settle();
    await (await q.get({ noAck: false }))!.reject();
    await settle();
    const m = (await q.get({ noAck: false }))!;
    expect(m.properties.headers?.['x-death']).toMatchObject([
      { queue: 'loop', reason: 'rejected', count: 2 },
    ]);
    await other.publishMessage({
      exchange: '',
      routingKey: 'other',
      properties: { headers: m.properties.headers! },
      body: m.body,
    });
    await m.ack();
    await (await other.get({ noAck: false }))!.reject();
    await settle();
    const deaths = (await q.get())!.properties.headers?.['x-death'] as {
      queue: string;
      count: number;
    }[];
    expect(deaths.map((d) => [d.queue, d.count])).toEqual([
      ['other', 1],
      ['loop', 2],
    ]);
  });

  it('drops a message whose TTL cycle would bring it back without a rejection', async () => {
    const q = await queues.fifo('cycle', {
      arguments: { 'x-message-ttl': 10, 'x-dead-letter-exchange': '' },
    });
    await q.publish('spin');
    queues.clock.advance(10);
    await settle();
    expect(q.messageCount).toBe(0);
  });

  it('dead-letters with reason delivery_limit once a message was requeued past x-delivery-limit', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('work', { arguments: { ...toDlq, 'x-delivery-limit': 2 } });
    await q.publish('poison');
    for (let i = 0; i < 2; i++) {
      const m = (await q.get({ noAck: false }))!;
      expect(m.properties.headers?.['x-delivery-count']).toBe(i);
      await m.nack(true);
    }
    const last = (await q.get({ noAck: false }))!;
    expect(last.properties.headers?.['x-delivery-count']).toBe(2);
    await last.nack(true);
    await settle();
    expect(q.stats().messages).toBe(0);
    const dead = (await dlq.get())!;
    expect(dead.properties.headers?.['x-first-death-reason']).toBe('delivery_limit');
  });

  it('with x-delivery-limit 0 dead-letters on the first requeue', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('work', { arguments: { ...toDlq, 'x-delivery-limit': 0 } });
    await q.publish('once');
    await (await q.get({ noAck: false }))!.nack(true);
    await settle();
    expect(await drain(dlq)).toEqual(['once']);
  });

  it('drops the message silently when the target queue does not exist', async () => {
    const q = await queues.fifo('work', {
      arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'nowhere' },
    });
    await q.publish('lost');
    await (await q.get({ noAck: false }))!.reject();
    await settle();
    expect(q.stats().messages).toBe(0);
    expect(queues.errors).toEqual([]);
  });

  it('drops rejected messages when no dead-letter exchange is set', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('work');
    await q.publish('x');
    await (await q.get({ noAck: false }))!.reject();
    await settle();
    expect(dlq.messageCount).toBe(0);
  });

  it('refuses a dead-letter routing key without a dead-letter exchange', async () => {
    await expect(
      Queue.open({ name: 'bad', arguments: { 'x-dead-letter-routing-key': 'dlq' } }),
    ).rejects.toThrow(PreconditionFailedError);
    await expect(
      Queue.open({ name: 'bad', arguments: { 'x-dead-letter-exchange': 5 } }),
    ).rejects.toThrow(/'x-dead-letter-exchange'/);
  });
});
