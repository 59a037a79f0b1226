import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { messageCodec } from '../../../src/message/codec.js';
import type { Message } from '../../../src/message/message.js';
import { normalizeMessage } from '../../../src/message/normalize.js';
import { retentionCut } from '../../../src/queues/stream/retention.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import type { SegmentInfo } from '../../../src/storage/types.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import {
  offsetsOf,
  openStream,
  publishMany,
  STORAGE_KINDS,
  settle,
  TestStorage,
} from './support.js';

const HOUR = 3_600_000;
/** Bytes of one message `m<digit>`: segments are sized in these. */
const SIZE = messageCodec.byteLength(normalizeMessage('m1', undefined, '', 'events'));

function segment(id: number, first: number, count: number, lastTimestamp = 0): SegmentInfo {
  return {
    id,
    firstOffset: first,
    lastOffset: first + count - 1,
    count,
    deletedCount: 0,
    bytes: count * 10,
    firstTimestamp: lastTimestamp,
    lastTimestamp,
  };
}

describe('retention rules', () => {
  const segs = [segment(1, 1, 3), segment(2, 4, 3), segment(3, 7, 3), segment(4, 10, 1)];

  it('x-max-length keeps at least the limit and at most the limit plus one segment', () => {
    expect(retentionCut(segs, { segmentBytes: 1, maxLength: 7 }, 0)).toBe(4); // 7 left
    expect(retentionCut(segs, { segmentBytes: 1, maxLength: 8 }, 0)).toBe(0);
    expect(retentionCut(segs, { segmentBytes: 1, maxLength: 1 }, 0)).toBe(10);
    expect(retentionCut(segs, { segmentBytes: 1, maxLength: 0 }, 0)).toBe(10); // never the active
  });

  it('x-max-length-bytes applies the same rule to stored bytes', () => {
    expect(retentionCut(segs, { segmentBytes: 1, maxLengthBytes: 40 }, 0)).toBe(7);
    expect(retentionCut(segs, { segmentBytes: 1, maxLengthBytes: 41 }, 0)).toBe(4);
  });

  it('x-max-age drops a segment once its newest message is older than now - max-age', () => {
    const aged = [segment(1, 1, 3, 1000), segment(2, 4, 3, 2000), segment(3, 7, 1, 0)];
    const limits = { segmentBytes: 1, maxAge: { amount: 1, unit: 's' as const } };
    expect(retentionCut(aged, limits, 2000)).toBe(0); // 1000 is not older than 1000
    expect(retentionCut(aged, limits, 2001)).toBe(4);
    expect(retentionCut(aged, limits, 9999)).toBe(7); // never the active segment
  });
});

describe.each(STORAGE_KINDS)('stream retention on %s storage', (kind) => {
  let storage: TestStorage;
  let clock: ManualClock;
  let stream: StreamQueue;

  beforeEach(() => {
    storage = new TestStorage(kind);
    clock = new ManualClock();
  });
  afterEach(async () => {
    await stream.close();
    await storage.dispose();
  });

  function open(args: Record<string, unknown>) {
    return openStream(storage, {
      clock,
      arguments: { 'x-stream-max-segment-size-bytes': 3 * SIZE, ...args },
    });
  }

  /** A tracked consumer `tag` that acknowledges its first message only, then goes. */
  async function ackFirstAndLeave(tag: string): Promise<void> {
    const seen: Message[] = [];
    const sub = await stream.subscribe({ tag, prefetch: 1, manualAck: true }, (m) => {
      seen.push(m);
    });
    await settle();
    await seen[0]!.ack();
    await sub.cancel();
  }

  it('drops whole segments for x-max-length when a segment fills', async () => {
    stream = await open({ 'x-max-length': 4 });
    await publishMany(stream, 9); // [1-3] [4-6] [7-9]
    await settle();
    expect(stream.firstOffset).toBe(4);
    expect(stream.messageCount).toBe(6);
    await publishMany(stream, 1, 10); // [10]: 7 left after dropping [4-6]... 4 >= 4
    await settle();
    expect(stream.firstOffset).toBe(7);
    expect(stream.messageCount).toBe(4);
  });

  it('drops whole segments for x-max-length-bytes', async () => {
    stream = await open({ 'x-max-length-bytes': 3 * SIZE });
    await publishMany(stream, 7);
    await settle();
    expect(stream.firstOffset).toBe(4);
  });

  it('applies x-max-age on an idle stream through the clock', async () => {
    stream = await open({ 'x-max-age': '1h' });
    await publishMany(stream, 3);
    clock.advance(HOUR / 2);
    await publishMany(stream, 3, 4);
    await publishMany(stream, 1, 7); // rolls: [1-3] [4-6] [7]
    await settle();
    expect(stream.firstOffset).toBe(1);
    clock.advance(HOUR / 2); // [1-3] is exactly one hour old: kept
    expect(stream.firstOffset).toBe(1);
    clock.advance(1);
    expect(stream.firstOffset).toBe(4);
    clock.advance(HOUR);
    expect(stream.firstOffset).toBe(7); // the active segment stays
    expect(stream.messageCount).toBe(1);
  });

  it('applies retention when the stream opens', async () => {
    stream = await open({ 'x-max-age': '1h' });
    await publishMany(stream, 4);
    await stream.close();
    await storage.reopen();
    clock.advance(2 * HOUR);
    stream = await openStream(storage, { clock });
    expect(stream.firstOffset).toBe(4);
    expect(stream.nextOffset).toBe(5);
  });

  it('applies limits set while it runs at once, and on the clock after that', async () => {
    stream = await open({});
    await publishMany(stream, 7); // [1-3] [4-6] [7]
    await settle();
    clock.advance(HOUR / 2);
    stream.applyLimits({ ...stream.limits, maxAge: { amount: 1, unit: 'h' } });
    expect(stream.firstOffset).toBe(1);
    clock.advance(HOUR / 2 + 1);
    expect(stream.firstOffset).toBe(7);
    stream.applyLimits(stream.arguments);
    await publishMany(stream, 3, 8);
    clock.advance(2 * HOUR);
    expect(stream.firstOffset).toBe(7); // the declared arguments set no limit
  });

  it('drops by a lower byte limit set while it runs', async () => {
    stream = await open({ 'x-max-length-bytes': 100 * SIZE });
    await publishMany(stream, 7);
    await settle();
    stream.applyLimits({ ...stream.limits, maxLengthBytes: 3 * SIZE });
    expect(stream.firstOffset).toBe(4);
    expect(stream.arguments.maxLengthBytes).toBe(100 * SIZE);
  });

  it('purge drops all but the active segment and says how many went', async () => {
    stream = await open({});
    await publishMany(stream, 8);
    expect(await stream.purge()).toBe(6);
    expect(stream.firstOffset).toBe(7);
    expect(stream.messageCount).toBe(2);
    await publishMany(stream, 1, 9);
    expect(stream.nextOffset).toBe(10);
  });

  it('moves a consumer whose position was dropped to the oldest retained message', async () => {
    stream = await open({});
    await publishMany(stream, 6);
    const seen: Message[] = [];
    const sub = await stream.subscribe(
      { prefetch: 1, manualAck: true, args: { 'x-stream-offset': 'first' } },
      (m) => {
        seen.push(m);
      },
    );
    await settle();
    await publishMany(stream, 3, 7);
    await stream.purge(); // drops [1-3] [4-6]
    await seen[0]!.ack();
    await settle();
    expect(offsetsOf(seen)).toEqual([1, 7]);
    await sub.cancel();
  });

  it('forgets stored offsets that point before the oldest retained message', async () => {
    stream = await open({});
    await publishMany(stream, 6);
    await ackFirstAndLeave('slow');
    expect(stream.storedOffset('slow')).toBe(2);
    await publishMany(stream, 1, 7);
    await stream.purge();
    expect(stream.storedOffset('slow')).toBeUndefined();
  });

  it('forgets stored offsets that x-max-length retention passed, and keeps the others', async () => {
    stream = await open({ 'x-max-length': 4 });
    await publishMany(stream, 6); // [1-3] [4-6]
    await ackFirstAndLeave('slow');
    const ahead = await stream.subscribe({ tag: 'ahead', prefetch: 10 }, () => {});
    await settle();
    await ahead.cancel();
    expect([stream.storedOffset('slow'), stream.storedOffset('ahead')]).toEqual([2, 7]);
    await publishMany(stream, 4, 7); // [7-9] [10]: [1-3] and [4-6] go, 4 messages stay
    await settle();
    expect(stream.firstOffset).toBe(7);
    expect([stream.storedOffset('slow'), stream.storedOffset('ahead')]).toEqual([undefined, 7]);
    // Resuming without a stored offset starts at the oldest retained message.
    const again: Message[] = [];
    await stream.subscribe({ tag: 'slow', prefetch: 1 }, (m) => {
      again.push(m);
    });
    await settle();
    expect(offsetsOf(again)[0]).toBe(7);
  });

  it('keeps messages, offsets and retention state across reopen', async () => {
    stream = await open({ 'x-max-length': 3 });
    await publishMany(stream, 10);
    await settle();
    const before = {
      first: stream.firstOffset,
      next: stream.nextOffset,
      count: stream.messageCount,
    };
    // [1-3] [4-6] [7-9] [10]: the oldest segments went, at least 3 messages stayed.
    expect(before).toEqual({ first: 7, next: 11, count: 4 });
    await stream.close();
    await storage.reopen();
    stream = await openStream(storage, { clock });
    expect({
      first: stream.firstOffset,
      next: stream.nextOffset,
      count: stream.messageCount,
    }).toEqual(before);
    expect(stream.arguments.maxLength).toBe(3);
    const bodies: string[] = [];
    for await (const entry of stream.read('first'))
      bodies.push(new TextDecoder().decode(entry.message.body));
    expect(bodies.at(-1)).toBe('m10');
    await publishMany(stream, 1, 11);
    expect(stream.nextOffset).toBe(12);
  });
});
