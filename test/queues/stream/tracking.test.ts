import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import { UnsettledOffsets } from '../../../src/queues/stream/tracking.js';
import { encodeName } from '../../../src/storage/fs/names.js';
import { storagePerTest } from '../../support/test-storage.js';
import {
  offsetsOf,
  openStream,
  publishMany,
  STORAGE_KINDS,
  settle,
  streamPerTest,
  type TestStorage,
} from './support.js';

describe('first unsettled offset', () => {
  it('advances past in-order and out-of-order settlements', () => {
    const u = new UnsettledOffsets();
    expect(u.first()).toBeUndefined();
    for (const o of [3, 4, 7, 9]) u.add(o);
    u.settle(4);
    expect(u.first()).toBe(3);
    u.settle(3);
    expect(u.first()).toBe(7);
    u.settle(9);
    u.settle(8); // unknown: ignored
    expect(u.first()).toBe(7);
    u.settle(7);
    expect(u.first()).toBeUndefined();
    expect(u.size).toBe(0);
  });
});

describe.each(STORAGE_KINDS)('offset tracking on %s storage', (kind) => {
  let storage: TestStorage;
  let stream: StreamQueue;
  streamPerTest(
    kind,
    (fresh) => ({ storage, stream } = fresh),
    () => stream,
  );

  async function consume(
    params: Parameters<StreamQueue['subscribe']>[0],
    onMessage: (m: Message, all: Message[]) => void = () => {},
  ) {
    const seen: Message[] = [];
    const sub = await stream.subscribe({ manualAck: true, ...params }, (m) => {
      seen.push(m);
      onMessage(m, seen);
    });
    await settle();
    return { sub, seen };
  }

  it('a named consumer without x-stream-offset starts at the beginning and resumes where it left off', async () => {
    await publishMany(stream, 5);
    const first = await consume({ tag: 'worker' }, (m) => {
      if (m.deliveryTag <= 3) void m.ack();
    });
    expect(offsetsOf(first.seen)).toEqual([1, 2, 3, 4, 5]);
    expect(stream.storedOffset('worker')).toBe(4); // 4 and 5 delivered, not acked
    await first.sub.cancel();
    const second = await consume({ tag: 'worker' });
    expect(offsetsOf(second.seen)).toEqual([4, 5]);
  });

  it('stores the first unacknowledged offset, not the read position', async () => {
    await publishMany(stream, 4);
    const { seen } = await consume({ tag: 'w' });
    await seen[1]!.ack();
    await seen[2]!.ack();
    expect(stream.storedOffset('w')).toBe(1);
    await seen[0]!.ack();
    expect(stream.storedOffset('w')).toBe(4);
    await seen[3]!.ack();
    expect(stream.storedOffset('w')).toBe(5);
  });

  it('counts a message rejected without requeue as settled, a requeued one as not', async () => {
    await publishMany(stream, 2);
    const { seen } = await consume({ tag: 'w', prefetch: 1 });
    await seen[0]!.nack(true);
    await settle();
    expect(stream.storedOffset('w')).toBeUndefined(); // a requeue settles nothing: nothing stored yet
    await seen[1]!.reject(false); // the redelivery of 1
    await settle();
    expect(stream.storedOffset('w')).toBe(2);
  });

  it('stores nothing for a consumer that settled nothing: resumed, it starts from its x-stream-offset again', async () => {
    await publishMany(stream, 2);
    const args = { 'x-stream-offset': 'next', 'x-stream-automatic-offset-tracking': true };
    const first = await consume({ tag: 'idle', args });
    await first.sub.cancel();
    expect(stream.storedOffset('idle')).toBeUndefined();
    await stream.publish('meanwhile');
    const again = await consume({ tag: 'idle', args });
    await stream.publish('after');
    await settle();
    expect(again.seen.map((m) => m.bodyString())).toEqual(['after']);
    await again.seen[0]!.ack();
    await settle();
    expect(stream.storedOffset('idle')).toBe(5);
    await again.sub.cancel();
  });

  it('never stores for amq.ctag- consumers', async () => {
    await publishMany(stream, 2);
    const { sub, seen } = await consume({});
    await seen[0]!.ack();
    expect(sub.consumerTag.startsWith('amq.ctag-')).toBe(true);
    expect(stream.storedOffset(sub.consumerTag)).toBeUndefined();
  });

  it('with an explicit offset, stores only with x-stream-automatic-offset-tracking', async () => {
    await publishMany(stream, 3);
    const plain = await consume({ tag: 'plain', args: { 'x-stream-offset': 'first' } });
    await plain.seen[0]!.ack();
    expect(stream.storedOffset('plain')).toBeUndefined();

    const tracked = await consume({
      tag: 'tracked',
      args: { 'x-stream-offset': 'first', 'x-stream-automatic-offset-tracking': 'true' },
    });
    await tracked.seen[0]!.ack();
    await tracked.seen[1]!.ack();
    expect(stream.storedOffset('tracked')).toBe(3);
    await tracked.sub.cancel();

    // The stored offset takes priority over the given one.
    const again = await consume({
      tag: 'tracked',
      args: { 'x-stream-offset': 'first', 'x-stream-automatic-offset-tracking': true },
    });
    expect(offsetsOf(again.seen)).toEqual([3]);
  });

  it('with an explicit offset and no tracking, neither reads nor moves a stored offset', async () => {
    await publishMany(stream, 4);
    const named = await consume({ tag: 'w' }, (m) => {
      if (m.deliveryTag <= 2) void m.ack();
    });
    await named.sub.cancel();
    expect(stream.storedOffset('w')).toBe(3);
    const explicit = await consume({ tag: 'w', args: { 'x-stream-offset': 1 } }, (m) => {
      void m.ack();
    });
    expect(offsetsOf(explicit.seen)).toEqual([1, 2, 3, 4]);
    expect(stream.storedOffset('w')).toBe(3);
  });

  it('never stores for a tag of the amq.ctag- form, given or asked to track', async () => {
    await publishMany(stream, 2);
    for (const args of [
      {},
      { 'x-stream-offset': 'first', 'x-stream-automatic-offset-tracking': true },
    ]) {
      const tag = `amq.ctag-mine-${Object.keys(args).length}`;
      const { sub, seen } = await consume({ tag, args });
      expect(offsetsOf(seen)).toEqual([1, 2]);
      for (const m of seen) await m.ack();
      await sub.cancel();
      expect(stream.storedOffset(tag)).toBeUndefined();
    }
  });

  it('moves the stored offset past messages a filter skipped', async () => {
    await stream.publish('a', { headers: { 'x-stream-filter-value': 'x' } });
    await stream.publish('b', { headers: { 'x-stream-filter-value': 'y' } });
    await stream.publish('c', { headers: { 'x-stream-filter-value': 'y' } });
    const { seen } = await consume({ tag: 'xs', args: { 'x-stream-filter': 'x' } });
    expect(offsetsOf(seen)).toEqual([1]);
    await seen[0]!.ack();
    expect(stream.storedOffset('xs')).toBe(4);
  });

  it('keeps stored offsets through close and reopen', async () => {
    await publishMany(stream, 3);
    const { seen } = await consume({ tag: 'w' });
    await seen[0]!.ack();
    await stream.close();
    await storage.reopen();
    stream = await openStream(storage);
    expect(stream.storedOffset('w')).toBe(2);
    const again = await consume({ tag: 'w' });
    expect(offsetsOf(again.seen)).toEqual([2, 3]);
  });
});

describe('offset tracking on fs storage', () => {
  const t = storagePerTest('fs');

  it('keeps one entry per tag on disk however often it stores', async () => {
    const stream = await openStream(t.storage);
    await publishMany(stream, 3000);
    let acked = 0;
    for (const tag of ['a', 'b']) {
      const seen: Message[] = [];
      await stream.subscribe({ tag, prefetch: 1, manualAck: true }, (m) => {
        seen.push(m);
      });
      // One ack per turn of the event loop: each one a change of its own to write.
      while (seen.length < 3000) {
        await seen.at(-1)!.ack();
        acked++;
        await settle();
      }
    }
    expect(acked).toBe(5998);
    await stream.close();
    const metaFile = join(t.storage.dir!, encodeName('events'), '~meta');
    // Without compaction the file would hold some 6,000 records of 30-odd bytes.
    expect(statSync(metaFile).size).toBeLessThan(48 * 1024);
    await t.storage.reopen();
    const reopened = await openStream(t.storage);
    expect([reopened.storedOffset('a'), reopened.storedOffset('b')]).toEqual([3000, 3000]);
    const meta = (await t.storage.storage.namespace('events')).meta;
    expect([...meta.entries('stream.offset.')].map(([key]) => key)).toEqual([
      'stream.offset.a',
      'stream.offset.b',
    ]);
    await reopened.close();
  });

  it('resumes from a durable stored offset, never past an unacknowledged message', async () => {
    let stream = await openStream(t.storage);
    await publishMany(stream, 5);
    const seen: Message[] = [];
    await stream.subscribe({ tag: 'w', manualAck: true }, (m) => {
      seen.push(m);
    });
    await settle();
    await seen[0]!.ack();
    await seen[1]!.ack();
    await (await t.storage.storage.namespace('events')).sync(); // stored offset 3 is durable
    await seen[3]!.ack(); // 3 stays unacknowledged: the stored offset cannot pass it
    // No close: the directory is reopened as a restarted process would.
    t.storage.crash();
    stream = await openStream(t.storage);
    expect(stream.storedOffset('w')).toBe(3);
    const again: Message[] = [];
    await stream.subscribe({ tag: 'w' }, (m) => {
      again.push(m);
    });
    await settle();
    expect(offsetsOf(again)).toEqual([3, 4, 5]);
    await stream.close();
  });
});
