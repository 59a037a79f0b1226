import { describe, expect, it } from 'vitest';
import { MqliteError } from '../../../src/errors.js';
import type { Message } from '../../../src/message/message.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import {
  offsetsOf,
  publishMany,
  STORAGE_KINDS,
  settle,
  streamPerTest,
  type TestStorage,
} from './support.js';

describe.each(STORAGE_KINDS)('stream consumers on %s storage', (kind) => {
  let storage: TestStorage;
  let stream: StreamQueue;
  streamPerTest(
    kind,
    (fresh) => ({ storage, stream } = fresh),
    () => stream,
  );

  it.each([
    [{ noAck: true }, 'noAck'],
    [{ prefetch: 0 }, 'prefetch'],
    [{ exclusive: true }, 'exclusive'],
    [{ args: { 'x-priority': 5 } }, 'x-priority'],
  ])('refuses a consumer with %j (406)', async (params, word) => {
    const error = await stream.subscribe(params, () => {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MqliteError);
    expect((error as MqliteError).replyCode).toBe(406);
    expect((error as Error).message).toContain(word);
    expect(stream.consumerCount).toBe(0);
  });

  it('refuses get() with 540 NOT_IMPLEMENTED', async () => {
    const error = await stream.get().catch((e: unknown) => e);
    expect((error as MqliteError).replyCode).toBe(540);
    expect((error as MqliteError).code).toBe('MQLITE_NOT_IMPLEMENTED');
  });

  it('gives a consumer without a tag an amq.ctag- tag', async () => {
    const sub = await stream.subscribe({ tag: '' }, () => {});
    expect(sub.consumerTag).toMatch(/^amq\.ctag-.+/);
    const other = await stream.subscribe({}, () => {});
    expect(other.consumerTag).not.toBe(sub.consumerTag);
  });

  it('refuses a consumer tag already in use on the stream', async () => {
    await stream.subscribe({ tag: 'a' }, () => {});
    await expect(stream.subscribe({ tag: 'a' }, () => {})).rejects.toThrow('already in use');
  });

  it('gives every consumer every message: N consumers are N independent cursors', async () => {
    await publishMany(stream, 3);
    const a: Message[] = [];
    const b: Message[] = [];
    await stream.subscribe({ args: { 'x-stream-offset': 'first' } }, (m) => {
      a.push(m);
    });
    await stream.subscribe({ args: { 'x-stream-offset': 2 } }, (m) => {
      b.push(m);
    });
    await publishMany(stream, 2, 4);
    await settle();
    expect(offsetsOf(a)).toEqual([1, 2, 3, 4, 5]);
    expect(offsetsOf(b)).toEqual([2, 3, 4, 5]);
    expect(stream.messageCount).toBe(5); // consuming removes nothing
  });

  it('wakes a consumer waiting at the end on the next publish', async () => {
    const sub = await stream.subscribe({ args: { 'x-stream-offset': 'next' } });
    const iterator = sub[Symbol.asyncIterator]();
    const next = iterator.next();
    await stream.publish('hello');
    const result = await next;
    expect(result.done).toBe(false);
    expect((result.value as Message).bodyString()).toBe('hello');
    await iterator.return?.();
  });

  it('bounds unacked deliveries by prefetch', async () => {
    await publishMany(stream, 10);
    const held: Message[] = [];
    await stream.subscribe(
      { prefetch: 3, manualAck: true, args: { 'x-stream-offset': 'first' } },
      (m) => {
        held.push(m);
      },
    );
    await settle();
    expect(offsetsOf(held)).toEqual([1, 2, 3]);
    await held[0]!.ack();
    await held[1]!.ack();
    await settle();
    expect(offsetsOf(held)).toEqual([1, 2, 3, 4, 5]);
  });

  it('redelivers requeued messages before newer ones, in rejection order, same offset', async () => {
    await publishMany(stream, 5);
    const seen: Message[] = [];
    await stream.subscribe(
      { prefetch: 3, manualAck: true, args: { 'x-stream-offset': 'first' } },
      (m) => {
        seen.push(m);
        // Both are requeued before either can be delivered again: 2 first, then 1.
        if (seen.length === 3) {
          void seen[1]!.nack(true);
          void seen[0]!.reject(true);
        }
      },
    );
    await settle();
    expect(offsetsOf(seen)).toEqual([1, 2, 3, 2, 1]);
    expect(seen.map((m) => m.redelivered)).toEqual([false, false, false, true, true]);
    expect(seen.slice(3).map((m) => [m.offset, m.bodyString()])).toEqual([
      [2, 'm2'],
      [1, 'm1'],
    ]);
    for (const m of seen.slice(2)) await m.ack();
    await settle();
    expect(offsetsOf(seen)).toEqual([1, 2, 3, 2, 1, 4, 5]);
    expect(seen[5]!.redelivered).toBe(false);
  });

  it('does not redeliver a message rejected without requeue; acks delete nothing', async () => {
    await publishMany(stream, 2);
    const seen: Message[] = [];
    await stream.subscribe({ manualAck: true, args: { 'x-stream-offset': 'first' } }, (m) => {
      seen.push(m);
    });
    await settle();
    await seen[0]!.reject(false);
    await seen[1]!.ack();
    await settle();
    expect(offsetsOf(seen)).toEqual([1, 2]);
    expect(stream.messageCount).toBe(2);
  });

  it('requeues a message whose callback threw', async () => {
    await publishMany(stream, 1);
    let calls = 0;
    const seen: Message[] = [];
    await stream.subscribe({ args: { 'x-stream-offset': 'first' } }, (m) => {
      seen.push(m);
      if (++calls === 1) throw new Error('boom');
    });
    await settle();
    expect(seen.map((m) => [m.properties.headers?.['x-stream-offset'], m.redelivered])).toEqual([
      [1, false],
      [1, true],
    ]);
  });

  it('loses the redelivery list when the consumer goes', async () => {
    const seen: Message[] = [];
    const sub = await stream.subscribe(
      { tag: 'w', prefetch: 1, manualAck: true, args: { 'x-stream-offset': 'next' } },
      (m) => {
        seen.push(m);
        // Requeued while its consumer is busy, so it waits on the list; then the consumer goes.
        if (seen.length === 1) {
          void m.nack(true);
          void sub.cancel();
        }
      },
    );
    await publishMany(stream, 2);
    await settle();
    expect(offsetsOf(seen)).toEqual([1]);
    // A new consumer reads from its own offset: nothing of the old list comes back redelivered.
    const next: Message[] = [];
    await stream.subscribe({ tag: 'v', args: { 'x-stream-offset': 'first' } }, (m) => {
      next.push(m);
    });
    await settle();
    expect(next.map((m) => [m.offset, m.redelivered])).toEqual([
      [1, false],
      [2, false],
    ]);
  });

  it('iterates deliveries without a callback, acking as the loop advances', async () => {
    await publishMany(stream, 3);
    const sub = await stream.subscribe({ args: { 'x-stream-offset': 'first' } });
    const bodies: string[] = [];
    for await (const message of sub) {
      bodies.push(message.bodyString());
      if (bodies.length === 3) break;
    }
    expect(bodies).toEqual(['m1', 'm2', 'm3']);
    expect(stream.consumerCount).toBe(0);
  });

  it('delivers only what a filter matches, skipping the rest', async () => {
    await stream.publish('a', { headers: { 'x-stream-filter-value': 'red' } });
    await stream.publish('b', { headers: { 'x-stream-filter-value': 'blue' } });
    await stream.publish('c', { headers: { 'x-stream-filter-value': 'red,blue' } });
    await stream.publish('d');
    const seen: Message[] = [];
    await stream.subscribe(
      { tag: 'reds', args: { 'x-stream-offset': 'first', 'x-stream-filter': 'red' } },
      (m) => {
        seen.push(m);
      },
    );
    await settle();
    expect(offsetsOf(seen)).toEqual([1, 3]);
    await expect(stream.subscribe({ args: { 'x-stream-filter': 42 } }, () => {})).rejects.toThrow(
      'x-stream-filter must be a string, table, or array',
    );
  });

  it('delivers every match to a geo-filtered consumer whose prefetch window fills', async () => {
    const seen: Message[] = [];
    const near = { 'geo-within-radius': { lat: 59.33, lon: 18.07, radius_km: 10 } };
    await stream.subscribe(
      {
        prefetch: 1,
        manualAck: true,
        args: { 'x-stream-offset': 'next', 'x-stream-filter': near },
      },
      (m) => {
        seen.push(m);
      },
    );
    const here = { 'x-geo-lat': 59.33, 'x-geo-lon': 18.07 };
    const far = { 'x-geo-lat': 10, 'x-geo-lon': 10 };
    for (const headers of [far, here, far, here, here, far]) void stream.publish('p', { headers });
    await settle();
    for (let i = 0; i < 3; i++) {
      await seen.at(-1)!.ack();
      await settle();
    }
    await stream.publish('late', { headers: here });
    await settle();
    expect(offsetsOf(seen)).toEqual([2, 4, 5, 7]);
  });

  it('wakes a geo-filtered consumer only for messages in its region', async () => {
    const seen: Message[] = [];
    const near = { 'geo-within-radius': { lat: 59.33, lon: 18.07, radius_km: 10 } };
    await stream.subscribe(
      { args: { 'x-stream-offset': 'next', 'x-stream-filter': near } },
      (m) => {
        seen.push(m);
      },
    );
    await stream.publish('paris', { headers: { 'x-geo-lat': 48.85, 'x-geo-lon': 2.35 } });
    await stream.publish('stockholm', { headers: { 'x-geo-lat': 59.33, 'x-geo-lon': 18.06 } });
    await stream.publish('nowhere');
    await settle();
    await stream.publish('solna', { headers: { 'x-geo-lat': 59.36, 'x-geo-lon': 18.0 } });
    await settle();
    expect(seen.map((m) => [m.bodyString(), m.properties.headers?.['x-stream-offset']])).toEqual([
      ['stockholm', 2],
      ['solna', 4],
    ]);
  });
});
