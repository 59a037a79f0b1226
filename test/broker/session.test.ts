import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Message } from '../../src/message/message.js';
import { PriorityQueue, type Queue } from '../../src/queues/priority-queue.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('sessions', () => {
  it('returns unacked messages to the queue, redelivered, when the session closes', async () => {
    await using broker = await Broker.open();
    const session = broker.session();
    const q = (await session.queue('jobs', { maxPriority: 2 })) as PriorityQueue;
    expect(q).toBeInstanceOf(PriorityQueue);
    expect(await session.queue('jobs', { maxPriority: 2 })).toBe(q);
    await q.publish('a');
    await q.publish('b');
    const seen: Message[] = [];
    await q.subscribe({ manualAck: true }, (m) => {
      seen.push(m);
    });
    expect(seen.map((m) => m.bodyString())).toEqual(['a', 'b']);
    expect(broker.queues()[0]).toMatchObject({ messagesUnacknowledged: 2, consumers: 1 });
    await session.close();
    await session.close();
    const info = broker.queues()[0];
    expect(info).toMatchObject({ messagesReady: 2, messagesUnacknowledged: 0, consumers: 0 });
    const again = (await broker.queue('jobs', { maxPriority: 2 })) as PriorityQueue;
    const first = await again.get();
    expect([first?.bodyString(), first?.redelivered]).toEqual(['a', true]);
  });

  it('leaves consumers of other sessions alone', async () => {
    await using broker = await Broker.open();
    const s1 = broker.session();
    const s2 = broker.session();
    const q1 = (await s1.queue('q')) as Queue;
    const q2 = (await s2.queue('q')) as Queue;
    await q1.subscribe({ manualAck: true }, () => {});
    await q2.subscribe({ manualAck: true }, () => {});
    await s1.close();
    expect(broker.queues()[0]?.consumers).toBe(1);
    await expect(s1.queue('q')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await expect(q1.subscribe({}, () => {})).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
  });

  it('deletes its exclusive queues on close and locks them against other sessions (405)', async () => {
    await using broker = await Broker.open();
    const session = broker.session();
    const replies = await session.queue('', { exclusive: true });
    expect(replies.name).toMatch(/^amq\.gen-/);
    const mine = await session.queue('mine', { exclusive: true });
    await mine.publish('x');
    const locked = {
      code: 'MQLITE_RESOURCE_LOCKED',
      replyCode: 405,
      message:
        "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'mine' in vhost '/'. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.",
    };
    await expect(broker.queue('mine', { exclusive: true })).rejects.toMatchObject(locked);
    await expect(broker.session().queue('mine', { passive: true })).rejects.toMatchObject(locked);
    // A redeclare in the same session must keep `exclusive`.
    await expect(session.queue('mine')).rejects.toMatchObject({ replyCode: 405 });
    expect(await session.queue('mine', { exclusive: true })).toBe(mine);
    await session.close();
    expect(broker.queues()).toEqual([]);
  });

  it('deletes an auto-delete queue once its last consumer is gone', async () => {
    await using broker = await Broker.open();
    const q = (await broker.queue('temp', { autoDelete: true })) as Queue;
    // No consumer yet: it stays.
    await tick();
    expect(broker.queues()).toHaveLength(1);
    const a = await q.subscribe({}, () => {});
    const b = await q.subscribe({}, () => {});
    await a.cancel();
    await tick();
    expect(broker.queues()).toHaveLength(1);
    await b.cancel();
    await tick();
    expect(broker.queues()).toEqual([]);
  });

  it('deletes an auto-delete queue when the session holding its consumer closes', async () => {
    await using broker = await Broker.open();
    const session = broker.session();
    const q = (await session.queue('temp', { autoDelete: true })) as Queue;
    await q.subscribe({}, () => {});
    await session.close();
    await tick();
    expect(broker.queues()).toEqual([]);
  });

  it('closes its sessions and deletes exclusive queues when the broker closes', async () => {
    const broker = await Broker.open();
    const session = broker.session();
    await session.queue('mine', { exclusive: true });
    await broker.close();
    expect(session.closed).toBe(true);
  });
});
