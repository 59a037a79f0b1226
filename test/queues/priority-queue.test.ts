import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MqliteError, QueueFullError } from '../../src/errors.js';
import { PriorityQueue, Queue } from '../../src/queues/priority-queue.js';
import {
  drain,
  publishAll,
  queuesPerTest,
  STORAGE_KINDS,
  settle,
  toDlq,
} from './classic/support.js';

async function refused(promise: Promise<unknown>, text: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MqliteError);
  expect((error as MqliteError).replyCode).toBe(406);
  expect((error as Error).message).toContain(text);
}

describe.each(STORAGE_KINDS)('priority queue on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('delivers the highest priority first and keeps FIFO order within a level', async () => {
    const q = await queues.priority('jobs', 9);
    await publishAll(q, [
      ['low-1', { priority: 1 }],
      ['high-1', { priority: 7 }],
      'none-1',
      ['mid-1', { priority: 4 }],
      ['high-2', { priority: 7 }],
      ['low-2', { priority: 1 }],
      'none-2',
    ]);
    expect(await drain(q)).toEqual([
      'high-1',
      'high-2',
      'mid-1',
      'low-1',
      'low-2',
      'none-1',
      'none-2',
    ]);
  });

  it('caps a priority above x-max-priority at the maximum', async () => {
    const q = await queues.priority('jobs', 2);
    await publishAll(q, [
      ['capped', { priority: 200 }],
      ['top', { priority: 2 }],
      ['one', { priority: 1 }],
    ]);
    expect(await drain(q)).toEqual(['capped', 'top', 'one']);
    const delivered = await (async () => {
      await q.publish('x', { priority: 9 });
      return q.get();
    })();
    expect(delivered?.properties.priority).toBe(9);
  });

  it('treats x-max-priority 0 as a single FIFO level', async () => {
    const q = await queues.priority('flat', 0);
    await publishAll(q, [['a', { priority: 5 }], 'b', ['c', { priority: 1 }]]);
    expect(await drain(q)).toEqual(['a', 'b', 'c']);
  });

  it('serves a level that fills while higher levels are empty, then a higher one first again', async () => {
    const q = await queues.priority('jobs', 5);
    await publishAll(q, ['a', 'b']);
    expect((await q.get())?.bodyString()).toBe('a');
    await q.publish('urgent', { priority: 5 });
    expect(await drain(q)).toEqual(['urgent', 'b']);
  });

  it('refuses a publish that waited for its level to open once the queue closed', async () => {
    const q = await queues.priority('closing', 9);
    // The first publish to a level waits for its log to open.
    const published = q.publish('late', { priority: 3 });
    await q.close();
    const error = await published.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as MqliteError).code).toBe('MQLITE_CLOSED');
  });

  it('creates one log per level, named prio.NNN, only for levels it has seen', async () => {
    const q = await queues.priority('jobs', 255);
    await publishAll(q, [['a', { priority: 3 }], ['b', { priority: 200 }], 'c']);
    const ns = await queues.storage.storage.namespace('jobs');
    expect(await ns.listLogs()).toEqual(['prio.000', 'prio.003', 'prio.200']);
    if (queues.storage.dir !== undefined) {
      const levels = readdirSync(join(queues.storage.dir, 'jobs')).filter((f) =>
        f.startsWith('prio.'),
      );
      expect(levels.sort()).toEqual(['prio.000', 'prio.003', 'prio.200']);
    }
    expect(await drain(q)).toEqual(['b', 'a', 'c']);
  });

  it.each([
    ['a', 'x-max-priority'],
    [-1, '0..255'],
    [256, '0..255'],
    [1.5, '0..255'],
  ])('refuses x-max-priority %s with 406 naming the limit', async (value, text) => {
    await refused(
      PriorityQueue.open({
        name: 'p',
        storage: queues.storage.storage,
        arguments: { 'x-max-priority': value },
      }),
      text,
    );
    expect(await queues.storage.storage.listNamespaces()).not.toContain('p');
  });

  it('requires x-max-priority', async () => {
    await refused(
      PriorityQueue.open({ name: 'p', storage: queues.storage.storage }),
      "'x-max-priority'",
    );
  });

  it('accepts x-max-priority as a bigint (an AMQP long) and as the maxPriority option', async () => {
    const q = await queues.priority('p', undefined, {
      arguments: { 'x-max-priority': 3n },
    });
    expect(q.maxPriority).toBe(3);
    await expect(
      PriorityQueue.open({ name: 'z', maxPriority: 2, arguments: { 'x-max-priority': 3 } }),
    ).rejects.toThrow(TypeError);
  });

  it('cannot change x-max-priority once declared', async () => {
    const q = await queues.priority('jobs', 5);
    await q.publish('kept', { priority: 5 });
    await q.close();
    queues.byName.delete('jobs');
    await queues.storage.reopen();
    await refused(
      PriorityQueue.open({ name: 'jobs', storage: queues.storage.storage, maxPriority: 6 }),
      "inequivalent arg 'x-max-priority' for queue 'jobs'",
    );
    const again = await queues.priority('jobs', 5);
    expect(await drain(again)).toEqual(['kept']);
  });

  it('keeps what was published when the publisher reuses its buffer right after publish()', async () => {
    const dlq = await queues.priority('dlq', 5);
    const q = await queues.priority('jobs', 5, {
      arguments: { ...toDlq, 'x-max-length': 3, 'x-overflow': 'reject-publish-dlx' },
    });
    const buffer = Buffer.from('first');
    // To a level not open yet (the enqueue waits for it), then to an open one.
    const waiting = q.publish(buffer, { priority: 3 });
    buffer.write('xxxxx');
    await waiting;
    buffer.write('again');
    const direct = q.publish(buffer, { priority: 3 });
    buffer.write('yyyyy');
    await direct;
    const view = new Uint8Array(Buffer.from('third'));
    const third = q.publish(view.buffer, { priority: 1 });
    view.fill(0x7a);
    await third;
    // Refused and dead-lettered to a level of `dlq` that is not open yet.
    buffer.write('forth');
    const refusedPublish = q.publish(buffer, { priority: 3 });
    buffer.write('zzzzz');
    await expect(refusedPublish).rejects.toThrow(QueueFullError);
    await settle();
    expect(await drain(q)).toEqual(['first', 'again', 'third']);
    expect(await drain(dlq)).toEqual(['forth']);
  });
});

describe.each(STORAGE_KINDS)('plain FIFO queue on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  it('delivers in publish order whatever the priority property says', async () => {
    const q = await queues.fifo('tasks');
    await publishAll(q, [['a', { priority: 1 }], ['b', { priority: 9 }], 'c']);
    expect(await drain(q)).toEqual(['a', 'b', 'c']);
  });

  it('refuses x-max-priority: that declares a priority queue', async () => {
    await refused(
      Queue.open({
        name: 't',
        storage: queues.storage.storage,
        arguments: { 'x-max-priority': 3 },
      }),
      'PriorityQueue',
    );
  });
});
