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

  describe('messages that expire at the same moment are dead-lettered in queue order', () => {
    const bodies = ['m0', 'm1', 'm2', 'm3', 'm4'];

    /** The bodies the dead-letter queue holds once the clock passed every expiry. */
    async function deadLettered(): Promise<string[]> {
      queues.clock.advance(60_000);
      await settle();
      return drain(queues.byName.get('dlq')!);
    }

    it('with x-message-ttl', async () => {
      await queues.fifo('dlq');
      const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-message-ttl': 60_000 } });
      await publishAll(q, bodies);
      expect(await deadLettered()).toEqual(bodies);
    });

    it('with a per-message expiration', async () => {
      await queues.fifo('dlq');
      const q = await queues.fifo('q', { arguments: toDlq });
      await publishAll(
        q,
        bodies.map((body) => [body, { expiration: '1000' }]),
      );
      expect(await deadLettered()).toEqual(bodies);
    });

    it('when requeued in another order than they were delivered', async () => {
      await queues.fifo('dlq');
      const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-message-ttl': 60_000 } });
      await publishAll(q, bodies);
      const held = [];
      for (let i = 0; i < 3; i++) held.push((await q.get({ noAck: false }))!);
      for (const message of held.reverse()) await message.nack(true);
      expect(await deadLettered()).toEqual(bodies);
    });

    it('after a reopen', async () => {
      await queues.fifo('dlq');
      const args = { arguments: { ...toDlq, 'x-message-ttl': 60_000 } };
      await publishAll(await queues.fifo('q', args), bodies.slice(0, 3));
      await publishAll(
        queues.byName.get('q')!,
        bodies.slice(3).map((body) => [body, { expiration: '60000' }]),
      );
      await queues.reopen();
      await queues.fifo('dlq');
      await queues.fifo('q', args);
      expect(await deadLettered()).toEqual(bodies);
    });

    it('on a priority queue: higher priorities first, then by arrival', async () => {
      await queues.fifo('dlq');
      const q = await queues.priority('q', 2, { arguments: { ...toDlq, 'x-message-ttl': 1000 } });
      await publishAll(q, [
        ['low0', { priority: 0 }],
        ['high0', { priority: 2 }],
        ['low1', { priority: 0 }],
        ['mid0', { priority: 1 }],
        ['high1', { priority: 2 }],
      ]);
      expect(await deadLettered()).toEqual(['high0', 'high1', 'mid0', 'low0', 'low1']);
    });
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
