import { describe, expect, it } from 'vitest';
import { MqliteError, QueueFullError } from '../../../src/errors.js';
import type { Message } from '../../../src/message/message.js';
import { Queue } from '../../../src/queues/priority-queue.js';
import { drain, publishAll, queuesPerTest, STORAGE_KINDS, settle, toDlq } from './support.js';

function deathReasons(bodies: { properties: { headers?: Record<string, unknown> } }[]) {
  return bodies.map((m) => m.properties.headers?.['x-first-death-reason']);
}

describe.each(STORAGE_KINDS)('length limits on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('drop-head removes the oldest message and dead-letters it as maxlen', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-max-length': 2 } });
    await publishAll(q, ['1', '2', '3', '4']);
    expect(await drain(q)).toEqual(['3', '4']);
    await settle();
    const dead = [(await dlq.get())!, (await dlq.get())!];
    expect(dead.map((m) => m.bodyString())).toEqual(['1', '2']);
    expect(deathReasons(dead)).toEqual(['maxlen', 'maxlen']);
  });

  it('drop-head on a priority queue drops the next message in delivery order, even the one just published', async () => {
    const q = await queues.priority('p', 5, { arguments: { 'x-max-length': 2 } });
    await publishAll(q, [
      ['low', { priority: 1 }],
      ['high', { priority: 5 }],
    ]);
    await q.publish('higher-still', { priority: 5 });
    expect(await drain(q)).toEqual(['higher-still', 'low']);
    await publishAll(q, [
      ['a', { priority: 1 }],
      ['b', { priority: 1 }],
    ]);
    await q.publish('top', { priority: 5 });
    expect(await drain(q)).toEqual(['a', 'b']);
  });

  it('x-max-length-bytes counts body bytes and dead-letters as maxlenbytes', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-max-length-bytes': 10 } });
    await publishAll(q, ['aaaa', 'bbbb', 'cccc']);
    expect(q.stats().messageBytesReady).toBe(8);
    await settle();
    const dead = (await dlq.get())!;
    expect(dead.bodyString()).toBe('aaaa');
    expect(dead.properties.headers?.['x-first-death-reason']).toBe('maxlenbytes');
  });

  it('counts only ready messages, not unacked ones', async () => {
    const q = await queues.fifo('q', { arguments: { 'x-max-length': 1 } });
    await q.publish('held');
    const held = (await q.get({ noAck: false }))!;
    await q.publish('ready');
    expect(q.stats()).toMatchObject({ messagesReady: 1, messagesUnacknowledged: 1 });
    await held.ack();
    expect(await drain(q)).toEqual(['ready']);
  });

  it('reject-publish refuses the new message with MQLITE_QUEUE_FULL and changes nothing', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('q', {
      arguments: { ...toDlq, 'x-max-length': 2, 'x-overflow': 'reject-publish' },
    });
    await publishAll(q, ['1', '2']);
    const error = await q.publish('3').catch((e) => e);
    expect(error).toBeInstanceOf(QueueFullError);
    expect(error.code).toBe('MQLITE_QUEUE_FULL');
    expect(error.message).toContain("queue 'q'");
    expect(q.stats()).toMatchObject({ messages: 2, messageBytes: 2 });
    await settle();
    expect(dlq.messageCount).toBe(0);
    expect(await drain(q)).toEqual(['1', '2']);
    await q.publish('4');
    expect(await drain(q)).toEqual(['4']);
  });

  it('reject-publish also applies to x-max-length-bytes', async () => {
    const q = await queues.fifo('q', {
      arguments: { 'x-max-length-bytes': 5, 'x-overflow': 'reject-publish' },
    });
    await q.publish('abc');
    await expect(q.publish('def')).rejects.toThrow(QueueFullError);
    await q.publish('de');
    expect(await drain(q)).toEqual(['abc', 'de']);
  });

  it('reject-publish-dlx refuses the new message and dead-letters it', async () => {
    const dlq = await queues.fifo('dlq');
    const q = await queues.fifo('q', {
      arguments: { ...toDlq, 'x-max-length': 1, 'x-overflow': 'reject-publish-dlx' },
    });
    await q.publish('kept');
    await expect(q.publish('refused')).rejects.toThrow(QueueFullError);
    await settle();
    const dead = (await dlq.get())!;
    expect(dead.bodyString()).toBe('refused');
    expect(dead.properties.headers?.['x-first-death-reason']).toBe('maxlen');
    expect(await drain(q)).toEqual(['kept']);
  });

  // A server reads a nack and the publish after it from one chunk when they come together: both
  // then reach the queue in the same turn, which must not change where the publish goes.
  for (const when of ['right after', 'in the same turn as'] as const) {
    it(`a message published ${when} a requeue goes to the consumer with room, not past a limit of 0`, async () => {
      const dlq = await queues.fifo('dlq');
      const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-max-length': 0 } });
      const held: Message[] = [];
      await q.subscribe({ prefetch: 1, manualAck: true }, (m) => {
        held.push(m);
      });
      await q.publish('m1');
      const requeued = held[0]!.nack(true);
      if (when === 'right after') await requeued;
      await Promise.all([requeued, q.publish('m2')]);
      expect(held.map((m) => m.bodyString())).toEqual(['m1', 'm2']);
      await settle();
      const dead = (await dlq.get())!;
      expect([dead.bodyString(), ...deathReasons([dead])]).toEqual(['m1', 'maxlen']);
      expect(await dlq.get()).toBeNull();
    });
  }

  describe('an expired message requeued into a full queue is dropped by the limit, not by its TTL', () => {
    for (const [limit, reason] of [
      ['x-max-length', 'maxlen'],
      ['x-max-length-bytes', 'maxlenbytes'],
    ] as const) {
      for (const how of ['nack', 'close'] as const) {
        it(`${limit}, returned by ${how === 'nack' ? 'a nack' : 'a closing consumer'}`, async () => {
          const dlq = await queues.fifo('dlq');
          const q = await queues.fifo('q', { arguments: { ...toDlq, [limit]: 0 } });
          const held: Message[] = [];
          const consumer = await q.subscribe({ prefetch: 1, manualAck: true }, (m) => {
            held.push(m);
          });
          // An empty queue hands it to the consumer at once: no limit or TTL applied yet.
          await q.publish('m1', { expiration: '0' });
          expect(held.map((m) => m.bodyString())).toEqual(['m1']);
          if (how === 'nack') await held[0]!.nack(true);
          else await consumer.close();
          await settle();
          const dead = (await dlq.get())!;
          expect(dead.bodyString()).toBe('m1');
          expect(dead.properties.headers?.['x-first-death-reason']).toBe(reason);
          expect(await dlq.get()).toBeNull();
          q.assertConsistent();
        });
      }
    }

    it('a get right after the requeue never returns the expired message', async () => {
      const dlq = await queues.fifo('dlq');
      const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-max-length': 5 } });
      await q.publish('m1', { expiration: '10' });
      const held = (await q.get({ noAck: false }))!;
      queues.clock.advance(10);
      void held.nack(true);
      expect(await q.get()).toBeNull();
      await settle();
      expect(deathReasons([(await dlq.get())!])).toEqual(['expired']);
    });

    it('an expired message requeued behind the limit expires once the heads are dropped', async () => {
      const dlq = await queues.fifo('dlq');
      const q = await queues.fifo('q', { arguments: { ...toDlq, 'x-max-length': 1 } });
      await q.publish('a', { expiration: '10' });
      await q.get({ noAck: false });
      await q.publish('b', { expiration: '10' });
      const b = (await q.get({ noAck: false }))!;
      queues.clock.advance(10);
      // Both come back together: the limit drops a, the head; b, expired, goes next.
      await b.nack(true, true);
      await settle();
      expect(deathReasons([(await dlq.get())!, (await dlq.get())!])).toEqual(['maxlen', 'expired']);
      expect(await q.get()).toBeNull();
    });
  });

  it('refuses any other x-overflow value and negative limits with 406', async () => {
    for (const args of [
      { 'x-overflow': 'drop-tail' },
      { 'x-max-length': -1 },
      { 'x-max-length-bytes': 'lots' },
    ]) {
      const error = await Queue.open({ name: 'bad', arguments: args }).catch((e) => e);
      expect(error).toBeInstanceOf(MqliteError);
      expect(error.replyCode).toBe(406);
      expect(error.message).toContain(`'${Object.keys(args)[0]}'`);
    }
  });
});
