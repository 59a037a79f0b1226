import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MqliteError } from '../../../src/errors.js';
import { messageCodec } from '../../../src/message/codec.js';
import type { Message } from '../../../src/message/message.js';
import { normalizeMessage } from '../../../src/message/normalize.js';
import type { FieldValue } from '../../../src/message/types.js';
import { parseOffsetSpec } from '../../../src/queues/stream/offset-spec.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import {
  countReads,
  offsetsOf,
  openStream,
  publishMany,
  type ReadCounter,
  STORAGE_KINDS,
  settle,
  TestStorage,
} from './support.js';

/** Bytes of one message `m<digit>`: segments are sized in these. */
const SIZE = messageCodec.byteLength(normalizeMessage('m1', undefined, '', 'events'));

const INVALID =
  "PRECONDITION_FAILED - x-stream-offset must be an integer, a timestamp, 'first', 'next' or 'last'";

describe('x-stream-offset parsing', () => {
  it.each(['foo', 1.5, '5', null, true, {}, new Date(Number.NaN), Number.POSITIVE_INFINITY])(
    'refuses %j with 406',
    (value) => {
      expect(() => parseOffsetSpec(value)).toThrow(INVALID);
      try {
        parseOffsetSpec(value);
      } catch (error) {
        expect((error as MqliteError).replyCode).toBe(406);
      }
    },
  );

  it('accepts names, integers, AMQP longs and dates', () => {
    expect(parseOffsetSpec('first')).toEqual({ kind: 'first' });
    expect(parseOffsetSpec(7)).toEqual({ kind: 'offset', offset: 7 });
    expect(parseOffsetSpec(7n)).toEqual({ kind: 'offset', offset: 7 });
    expect(parseOffsetSpec(-3)).toEqual({ kind: 'tail', count: 3 });
    expect(parseOffsetSpec(new Date(5000))).toEqual({ kind: 'time', time: 5000 });
  });
});

describe.each(STORAGE_KINDS)('stream offsets on %s storage', (kind) => {
  let storage: TestStorage;
  let clock: ManualClock;
  let stream: StreamQueue;
  let received: Message[];

  beforeEach(async () => {
    storage = new TestStorage(kind);
    clock = new ManualClock();
    // Tiny segments: 3 messages of this size each.
    stream = await openStream(storage, {
      clock,
      arguments: { 'x-stream-max-segment-size-bytes': 3 * SIZE },
    });
    received = [];
  });
  afterEach(async () => {
    await stream.close();
    await storage.dispose();
  });

  async function startAt(offset: FieldValue, n = Number.POSITIVE_INFINITY): Promise<number[]> {
    const sub = await stream.subscribe({ args: { 'x-stream-offset': offset } }, (m) => {
      received.push(m);
    });
    await settle();
    await sub.cancel();
    return offsetsOf(received).slice(0, n);
  }

  it('numbers messages from 1 without gaps and carries the offset as a header', async () => {
    await stream.publish('a', { headers: { 'x-stream-offset': 999, other: 'kept' } });
    await publishMany(stream, 4);
    expect(await startAt('first')).toEqual([1, 2, 3, 4, 5]);
    expect(received[0]!.properties.headers).toEqual({ 'x-stream-offset': 1, other: 'kept' });
    expect(received.map((m) => m.offset)).toEqual([1, 2, 3, 4, 5]);
    expect(received.map((m) => m.bodyString())).toEqual(['a', 'm1', 'm2', 'm3', 'm4']);
    expect(received.map((m) => m.bodySize)).toEqual([1, 2, 2, 2, 2]);
    expect(stream.firstOffset).toBe(1);
    expect(stream.nextOffset).toBe(6);
  });

  it("'first' starts at the oldest retained message, 0 too", async () => {
    await publishMany(stream, 7);
    await stream.purge(); // keeps only the active segment: 7
    expect(await startAt('first')).toEqual([7]);
    received = [];
    expect(await startAt(0)).toEqual([7]);
  });

  it("'last' starts at the first message of the newest segment", async () => {
    await publishMany(stream, 8); // segments [1-3] [4-6] [7-8]
    expect(await startAt('last')).toEqual([7, 8]);
  });

  it("'next' delivers only what is published after it attaches", async () => {
    await publishMany(stream, 3);
    const sub = await stream.subscribe({ args: { 'x-stream-offset': 'next' } }, (m) => {
      received.push(m);
    });
    await settle();
    expect(received).toEqual([]);
    await publishMany(stream, 2, 4);
    await settle();
    expect(offsetsOf(received)).toEqual([4, 5]);
    await sub.cancel();
  });

  it('an integer starts there, clamped to the oldest retained; past the end is like next', async () => {
    await publishMany(stream, 7);
    expect(await startAt(5)).toEqual([5, 6, 7]);
    await stream.purge();
    received = [];
    expect(await startAt(2)).toEqual([7]);
    received = [];
    const sub = await stream.subscribe({ args: { 'x-stream-offset': 100 } }, (m) => {
      received.push(m);
    });
    await publishMany(stream, 1, 8);
    await settle();
    expect(offsetsOf(received)).toEqual([8]);
    await sub.cancel();
  });

  it('a negative integer starts at the last k messages, clamped; on an empty stream like next', async () => {
    const sub = await stream.subscribe({ args: { 'x-stream-offset': -2 } }, (m) => {
      received.push(m);
    });
    await publishMany(stream, 1);
    await settle();
    expect(offsetsOf(received)).toEqual([1]);
    await sub.cancel();
    await publishMany(stream, 5, 2);
    received = [];
    expect(await startAt(-1)).toEqual([6]);
    received = [];
    expect(await startAt(-2)).toEqual([5, 6]);
    received = [];
    expect(await startAt(-100)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('a negative integer is clamped to the oldest message retention left', async () => {
    await publishMany(stream, 7); // [1-3] [4-6] [7]
    await stream.purge();
    expect(await startAt(-5)).toEqual([7]);
  });

  it('a Date starts at the first message that arrived at or after it; none is like next', async () => {
    const t0 = clock.now();
    for (let i = 1; i <= 6; i++) {
      await stream.publish(`m${i}`);
      clock.advance(1000);
    }
    expect(await startAt(new Date(t0 + 2000))).toEqual([3, 4, 5, 6]);
    received = [];
    expect(await startAt(new Date(t0 + 2500))).toEqual([4, 5, 6]);
    received = [];
    expect(await startAt(new Date(t0 - 1))).toEqual([1, 2, 3, 4, 5, 6]);
    received = [];
    const sub = await stream.subscribe(
      { args: { 'x-stream-offset': new Date(t0 + 10_000) } },
      (m) => {
        received.push(m);
      },
    );
    await settle();
    expect(received).toEqual([]);
    await stream.publish('late');
    await settle();
    expect(offsetsOf(received)).toEqual([7]);
    await sub.cancel();
  });

  it('refuses an invalid x-stream-offset at subscribe', async () => {
    await expect(stream.subscribe({ args: { 'x-stream-offset': '5' } }, () => {})).rejects.toThrow(
      INVALID,
    );
    expect(stream.consumerCount).toBe(0);
  });
});

describe.each(STORAGE_KINDS)('seeking a stream on %s storage', (kind) => {
  const MESSAGES = 3000;
  let storage: TestStorage;
  let clock: ManualClock;
  let stream: StreamQueue;
  const counter: ReadCounter = { records: 0 };
  let t0 = 0;

  beforeEach(async () => {
    storage = new TestStorage(kind);
    clock = new ManualClock();
    t0 = clock.now();
    // About 100 segments, each message a millisecond after the one before.
    stream = await openStream(storage, {
      clock,
      storage: countReads(storage.storage, counter),
      arguments: { 'x-stream-max-segment-size-bytes': 30 * SIZE },
    });
    for (let i = 0; i < MESSAGES; i++) {
      await stream.publish(`m${i % 10}`);
      clock.advance(1);
    }
  });
  afterEach(async () => {
    await stream.close();
    await storage.dispose();
  });

  it.each([
    ['an offset', () => 2991],
    ['a Date', () => new Date(t0 + 2990)],
    ['the last k', () => -10],
  ])('reads no message before the start when subscribing at %s', async (_, start) => {
    counter.records = 0;
    const seen: Message[] = [];
    const sub = await stream.subscribe({ args: { 'x-stream-offset': start() } }, (m) => {
      seen.push(m);
    });
    await settle();
    await sub.cancel();
    expect(offsetsOf(seen)).toEqual(Array.from({ length: 10 }, (_, i) => 2991 + i));
    // The ten delivered, give or take the step that finds the end: no scan from the beginning.
    expect(counter.records).toBeLessThanOrEqual(12);
  });

  it('reads no message before the start in a read() replay', () => {
    counter.records = 0;
    expect([...stream.read(new Date(t0 + 1500), { limit: 1 })].map((e) => e.offset)).toEqual([
      1501,
    ]);
    expect(counter.records).toBeLessThanOrEqual(2);
  });
});
