import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import type { Message } from '../../../src/message/message.js';
import { DEAD_LETTER_RETRY_MS } from '../../../src/queues/classic/dead-letter-sender.js';
import type { Queue } from '../../../src/queues/priority-queue.js';
import { QuorumQueue } from '../../../src/queues/quorum/quorum-queue.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';

const QUORUM = { 'x-queue-type': 'quorum' } as const;

async function drain(queue: Pick<Queue, 'get'>): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString() ?? '');
  return out;
}

/** Takes one message, nacks it with requeue, and returns it. */
async function bounce(queue: Pick<Queue, 'get'>): Promise<Message | null> {
  const message = await queue.get({ noAck: false });
  await message?.nack(true);
  return message;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('a quorum queue declared through the broker', () => {
  it('is a QuorumQueue, typed so, listed with kind quorum and exported with type quorum', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue('jobs', { arguments: QUORUM });
    expectTypeOf(jobs).toMatchTypeOf<QuorumQueue>();
    expect(jobs).toBeInstanceOf(QuorumQueue);
    expect(jobs.type).toBe('quorum');
    const sugar = await broker.queue('sugar', { type: 'quorum' });
    expect(sugar).toBeInstanceOf(QuorumQueue);
    expect(broker.queues().find((q) => q.name === 'jobs')?.kind).toBe('quorum');
    const exported = broker.exportDefinitions().queues.find((q) => q.name === 'jobs');
    expect(exported).toMatchObject({ type: 'quorum', durable: true, auto_delete: false });
    await using copy = await Broker.open({ definitions: broker.exportDefinitions() });
    expect(copy.queues().find((q) => q.name === 'jobs')?.kind).toBe('quorum');
  });

  it('refuses server-named, exclusive, auto-delete and non-durable quorum queues with 406', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('', { arguments: QUORUM })).rejects.toMatchObject({
      replyCode: 406,
      message: expect.stringContaining("invalid property 'auto-delete'"),
    });
    await expect(broker.queue('q', { durable: false, arguments: QUORUM })).rejects.toMatchObject({
      replyCode: 406,
      message: "PRECONDITION_FAILED - invalid property 'non-durable' for queue 'q' in vhost '/'",
    });
    expect(broker.queues()).toEqual([]);
  });

  it('dead-letters a message returned more than the default 20 times (reason delivery_limit)', async () => {
    await using broker = await Broker.open();
    const dlq = await broker.queue('dlq');
    const jobs = await broker.queue('jobs', {
      arguments: { ...QUORUM, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'dlq' },
    });
    await jobs.publish('poison');
    const counts: unknown[] = [];
    for (let i = 0; i < 21; i++) {
      counts.push((await bounce(jobs))?.properties.headers?.['x-delivery-count']);
    }
    expect(counts).toEqual(Array.from({ length: 21 }, (_, i) => i));
    expect(await jobs.get()).toBeNull();
    const dead = await dlq.get();
    expect(dead?.bodyString()).toBe('poison');
    expect(dead?.properties.headers?.['x-first-death-reason']).toBe('delivery_limit');
  });

  it('delivers to consumers without x-delivery-count until a redelivery', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue('jobs', { arguments: QUORUM });
    await jobs.publish('a');
    const seen: Message[] = [];
    const sub = await jobs.subscribe({ manualAck: true, prefetch: 1 }, async (m) => {
      seen.push(m);
      if (seen.length === 1) await m.nack(true);
      else await m.ack();
    });
    await expect.poll(() => seen.length).toBe(2);
    expect(seen[0]?.properties.headers?.['x-delivery-count']).toBeUndefined();
    expect(seen[1]?.properties.headers?.['x-delivery-count']).toBe(1);
    await sub.cancel();
  });

  it('with x-delivery-limit -1 never dead-letters and returns a message to the back', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue('jobs', { arguments: { ...QUORUM, 'x-delivery-limit': -1 } });
    for (const body of ['a', 'b', 'c']) await jobs.publish(body);
    for (let i = 0; i < 25; i++) await bounce(jobs);
    // 25 returns of the head, each to the back: a, b, c rotated 25 times.
    expect(await drain(jobs)).toEqual(['b', 'c', 'a']);
  });

  it('takes delivery-limit, overflow and length from a policy', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue('jobs', { arguments: QUORUM });
    await broker.setPolicy('qq', {
      pattern: '^jobs$',
      definition: { 'delivery-limit': 1, 'max-length': 1, overflow: 'reject-publish' },
    });
    // reject-publish refuses once the queue is past its limit, as RabbitMQ's quorum queues do.
    await jobs.publish('a');
    await jobs.publish('b');
    await expect(jobs.publish('c')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect((await bounce(jobs))?.bodyString()).toBe('a');
    expect((await bounce(jobs))?.bodyString()).toBe('a');
    expect(await drain(jobs)).toEqual(['b']);
  });

  it('refuses publishes past its limit until it is back to 80% of it, requeues and purges included', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue('jobs', {
      arguments: { ...QUORUM, 'x-max-length': 5, 'x-overflow': 'reject-publish' },
    });
    for (const body of ['a', 'b', 'c', 'd', 'e']) await jobs.publish(body);
    const a = await jobs.get({ noAck: false });
    await jobs.publish('f');
    // a comes back: six ready, past the limit.
    await a?.nack(true);
    await new Promise((resolve) => setImmediate(resolve));
    await expect(jobs.publish('g')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    // Five ready: within the limit, above its 80%.
    expect((await jobs.get())?.bodyString()).toBe('a');
    await expect(jobs.publish('h')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect(await jobs.purge()).toBe(5);
    await jobs.publish('i');
    expect(await drain(jobs)).toEqual(['i']);
  });

  it('counts unconfirmed at-least-once dead letters toward its low mark until their target stores them', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const jobs = await broker.queue('jobs', {
      arguments: {
        ...QUORUM,
        'x-max-length': 1,
        'x-overflow': 'reject-publish',
        'x-dead-letter-strategy': 'at-least-once',
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'dead',
      },
    });
    await jobs.publish('a');
    // No queue takes the dead letter yet: it counts as one message.
    await (await jobs.get({ noAck: false }))?.reject(false);
    await jobs.publish('b');
    await expect(jobs.publish('c')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect((await jobs.get())?.bodyString()).toBe('b');
    await expect(jobs.publish('d')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    const dead = await broker.queue('dead');
    clock.advance(DEAD_LETTER_RETRY_MS);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(await drain(dead)).toEqual(['a']);
    await jobs.publish('e');
    expect(await drain(jobs)).toEqual(['e']);
  });

  it('acts on x-overflow reject-publish-dlx as drop-head, as RabbitMQ does', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue('jobs', {
      arguments: { ...QUORUM, 'x-max-length': 1, 'x-overflow': 'reject-publish-dlx' },
    });
    await jobs.publish('a');
    await jobs.publish('b');
    expect(await drain(jobs)).toEqual(['b']);
  });

  it('expires messages on the broker clock and deletes itself after x-expires', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const jobs = await broker.queue('jobs', {
      arguments: { ...QUORUM, 'x-message-ttl': 1000, 'x-expires': 5000 },
    });
    await jobs.publish('a');
    clock.advance(1000);
    expect(await jobs.get()).toBeNull();
    clock.advance(5000);
    await expect.poll(() => broker.queues().length).toBe(0);
  });

  it('refuses an if-unused or if-empty delete with 540, as RabbitMQ does', async () => {
    await using broker = await Broker.open();
    await broker.queue('jobs', { arguments: QUORUM });
    for (const [options, flag] of [
      [{ ifUnused: true }, 'if-unused'],
      [{ ifEmpty: true }, 'if-empty'],
    ] as const) {
      await expect(broker.deleteQueue('jobs', options)).rejects.toMatchObject({
        replyCode: 540,
        message: `NOT_IMPLEMENTED - cannot delete queue 'jobs' in vhost '/'. queue.delete operations with ${flag} flag set are not supported by quorum queues`,
      });
    }
    expect(await broker.deleteQueue('jobs')).toBe(0);
  });

  it('keeps confirmed messages and their limits across a restart on fs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-quorum-'));
    dirs.push(dir);
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      const jobs = await broker.queue('jobs', { arguments: { ...QUORUM, 'x-delivery-limit': 2 } });
      await jobs.publish('a');
      await jobs.publish('b');
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    const jobs = await broker.queue('jobs', { arguments: { ...QUORUM, 'x-delivery-limit': 2 } });
    expect(jobs).toBeInstanceOf(QuorumQueue);
    expect(jobs.limits.deliveryLimit).toBe(2);
    expect(await drain(jobs)).toEqual(['a', 'b']);
  });

  it('reopens past its reject-publish limit refusing publishes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-quorum-'));
    dirs.push(dir);
    const args = { ...QUORUM, 'x-max-length': 1, 'x-overflow': 'reject-publish' };
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      const jobs = await broker.queue('jobs', { arguments: args });
      await jobs.publish('a');
      await jobs.publish('b');
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    const jobs = await broker.queue('jobs', { arguments: args });
    await expect(jobs.publish('c')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect(await drain(jobs)).toEqual(['a', 'b']);
  });
});

describe('QuorumQueue.open', () => {
  it('refuses x-max-priority as RabbitMQ refuses it on a quorum queue', async () => {
    await expect(
      QuorumQueue.open({ name: 'q', arguments: { 'x-max-priority': 5 } }),
    ).rejects.toMatchObject({
      replyCode: 406,
      message:
        "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/' of queue type rabbit_quorum_queue",
    });
  });

  it('accepts replication arguments without effect, refusing them only when malformed', async () => {
    await using q = await QuorumQueue.open({
      name: 'q',
      arguments: { 'x-quorum-initial-group-size': 3, 'x-quorum-target-group-size': 5 },
    });
    expect(q.limits.deliveryLimit).toBe(20);
    await expect(
      QuorumQueue.open({ name: 'r', arguments: { 'x-quorum-initial-group-size': 'three' } }),
    ).rejects.toMatchObject({
      message:
        "PRECONDITION_FAILED - invalid arg 'x-quorum-initial-group-size' for queue 'r' in vhost '/': \"expected integer, got longstr\"",
    });
  });

  it('in strict mode refuses an argument a quorum queue does not know', async () => {
    await expect(
      QuorumQueue.open({ name: 'q', strict: true, arguments: { 'x-lvq-key': 'k' } }),
    ).rejects.toMatchObject({ replyCode: 406 });
  });
});
