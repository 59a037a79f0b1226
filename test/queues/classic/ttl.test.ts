import { describe, expect, it } from 'vitest';
import { MqliteError } from '../../../src/errors.js';
import { Queue } from '../../../src/queues/priority-queue.js';
import {
  collector,
  drain,
  publishAll,
  queuesPerTest,
  STORAGE_KINDS,
  settle,
  toDlq,
} from './support.js';

describe.each(STORAGE_KINDS)('message TTL on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('never delivers a message older than x-message-ttl', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-message-ttl': 1000 } });
    await q.publish('old');
    queues.clock.advance(500);
    await q.publish('young');
    queues.clock.advance(499);
    expect(q.messageCount).toBe(2);
    queues.clock.advance(1);
    expect(q.messageCount).toBe(1);
    expect(await drain(q)).toEqual(['young']);
  });

  it('removes an expired message wherever it is, without waiting for it to reach the head', async () => {
    const q = await queues.priority('p', 5);
    await publishAll(q, [
      ['blocker', { priority: 5 }],
      ['short', { priority: 1, expiration: '100' }],
    ]);
    queues.clock.advance(100);
    expect(q.stats()).toMatchObject({ messagesReady: 1, messageBytesReady: 7 });
    expect(await drain(q)).toEqual(['blocker']);
  });

  it('uses the lower of x-message-ttl and the message expiration', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-message-ttl': 1000 } });
    await publishAll(q, [
      ['short', { expiration: '200' }],
      ['long', { expiration: '5000' }],
      'plain',
    ]);
    queues.clock.advance(200);
    expect(q.messageCount).toBe(2);
    queues.clock.advance(800);
    expect(q.messageCount).toBe(0);
  });

  it('dead-letters an expired message with reason expired', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('q', {
      arguments: { ...toDlq, 'x-message-ttl': 50 },
    });
    await q.publish('late');
    queues.clock.advance(50);
    await settle();
    const dead = (await dlq.get())!;
    expect(dead.bodyString()).toBe('late');
    expect(dead.properties.headers?.['x-first-death-reason']).toBe('expired');
  });

  it('keeps the original expiry of a requeued message', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-message-ttl': 1000 } });
    await publishAll(q, ['a', 'b']);
    const a = (await q.get({ noAck: false }))!;
    queues.clock.advance(999);
    await a.nack(true);
    expect(q.messageCount).toBe(2);
    queues.clock.advance(1);
    expect(q.messageCount).toBe(0);
  });

  it('expires a message at once when it is requeued after its expiry', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-message-ttl': 100 } });
    await q.publish('a');
    const a = (await q.get({ noAck: false }))!;
    queues.clock.advance(5000);
    expect(q.stats().messagesUnacknowledged).toBe(1);
    await a.nack(true);
    expect(q.stats().messages).toBe(0);
  });

  it('with TTL 0 delivers only to a consumer that can take the message at once', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-message-ttl': 0 } });
    await q.publish('nobody');
    expect(q.messageCount).toBe(0);
    const c = collector();
    const sub = await q.subscribe({ prefetch: 1, manualAck: true }, c.callback);
    await publishAll(q, ['taken', 'full']);
    expect(c.bodies()).toEqual(['taken']);
    expect(q.messageCount).toBe(0);
    await sub.cancel();
  });

  it('refuses a negative, fractional or non-numeric x-message-ttl with 406', async () => {
    for (const value of [-1, 1.5, '10']) {
      const error = await Queue.open({ name: 'bad', arguments: { 'x-message-ttl': value } }).catch(
        (e) => e,
      );
      expect(error).toBeInstanceOf(MqliteError);
      expect(error.message).toContain("'x-message-ttl'");
    }
  });
});

describe.each(STORAGE_KINDS)('queue expiry (x-expires) on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('deletes an unused queue with its messages, without dead-lettering them', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('q', {
      arguments: { ...toDlq, 'x-expires': 1000 },
    });
    await q.publish('gone');
    queues.clock.advance(999);
    expect(q.closed).toBe(false);
    queues.clock.advance(1);
    await settle();
    expect(q.closed).toBe(true);
    expect(queues.byName.has('q')).toBe(false);
    expect(dlq.messageCount).toBe(0);
    expect(await queues.storage.storage.listNamespaces()).not.toContain('q');
  });

  it('restarts the countdown on get and touch, and waits while consumers exist', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-expires': 1000 } });
    queues.clock.advance(900);
    await q.get();
    queues.clock.advance(900);
    q.touch();
    queues.clock.advance(900);
    expect(q.closed).toBe(false);
    const sub = await q.subscribe({}, () => {});
    queues.clock.advance(5000);
    expect(q.closed).toBe(false);
    await sub.cancel();
    queues.clock.advance(1000);
    await settle();
    expect(q.closed).toBe(true);
  });

  it('refuses x-expires 0', async () => {
    await expect(Queue.open({ name: 'bad', arguments: { 'x-expires': 0 } })).rejects.toThrow(
      /'x-expires'.*1\.\./,
    );
  });
});
