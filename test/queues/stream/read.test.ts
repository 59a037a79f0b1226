import { describe, expect, it } from 'vitest';
import type { StreamEntry } from '../../../src/queues/stream/reader.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import { publishMany, STORAGE_KINDS, streamPerTest, type TestStorage } from './support.js';

const text = (entry: StreamEntry) => new TextDecoder().decode(entry.message.body);

describe.each(STORAGE_KINDS)('stream.read() on %s storage', (kind) => {
  let storage: TestStorage;
  let stream: StreamQueue;
  streamPerTest(
    kind,
    (fresh) => ({ storage, stream } = fresh),
    () => stream,
  );

  async function collect(iterable: AsyncIterable<StreamEntry>): Promise<StreamEntry[]> {
    const out: StreamEntry[] = [];
    for await (const entry of iterable) out.push(entry);
    return out;
  }

  it('replays from any x-stream-offset value, up to the end, tracking nothing', async () => {
    await publishMany(stream, 5);
    const all = await collect(stream.read());
    expect(all.map((e) => e.offset)).toEqual([1, 2, 3, 4, 5]);
    expect(all.map(text)).toEqual(['m1', 'm2', 'm3', 'm4', 'm5']);
    expect((await collect(stream.read(3))).map((e) => e.offset)).toEqual([3, 4, 5]);
    expect((await collect(stream.read(-2))).map((e) => e.offset)).toEqual([4, 5]);
    expect(await collect(stream.read('next'))).toEqual([]);
    expect(stream.consumerCount).toBe(0);
    expect(() => stream.read('5')).toThrow('x-stream-offset must be');
  });

  it('keeps the messages it gave while the stream is read on and published to', async () => {
    const bodyOf = (i: number) => `${i}:`.padEnd(100, String.fromCharCode(97 + (i % 26)));
    const publishBodies = async (from: number, to: number) => {
      const all: Promise<void>[] = [];
      for (let i = from; i <= to; i++) all.push(stream.publish(bodyOf(i)));
      await Promise.all(all);
    };
    await publishBodies(1, 6000);
    const kept = [...stream.read('first')];
    for (let i = 0; i < 2; i++) for (const _ of stream.read('first')) void _.message.body;
    await publishBodies(6001, 7000);
    for await (const _ of stream.read(5000)) void _.message.body;
    expect(kept.map(text)).toEqual(Array.from({ length: 6000 }, (_, i) => bodyOf(i + 1)));
  });

  it('stops after limit messages', async () => {
    await publishMany(stream, 5);
    expect((await collect(stream.read('first', { limit: 2 }))).map((e) => e.offset)).toEqual([
      1, 2,
    ]);
    expect(await collect(stream.read('first', { limit: 0 }))).toEqual([]);
    expect(() => stream.read('first', { limit: -1 })).toThrow(RangeError);
  });

  it('follows the end when asked, until the limit', async () => {
    await publishMany(stream, 1);
    const reading = collect(stream.read('first', { follow: true, limit: 3 }));
    await publishMany(stream, 2, 2);
    expect((await reading).map(text)).toEqual(['m1', 'm2', 'm3']);
  });

  it('iterates what is stored synchronously, then follows with for await', async () => {
    await publishMany(stream, 3);
    expect([...stream.read(2)].map(text)).toEqual(['m2', 'm3']);
    expect([...stream.read('first', { limit: 2 })].map((e) => e.offset)).toEqual([1, 2]);

    const reader = stream.read('first', { follow: true, limit: 4 });
    expect([...reader].map((e) => e.offset)).toEqual([1, 2, 3]);
    const following = collect(reader);
    await publishMany(stream, 2, 4);
    expect((await following).map(text)).toEqual(['m4']);

    const controller = new AbortController();
    const aborted = stream.read('first', { signal: controller.signal });
    controller.abort();
    expect(() => [...aborted]).toThrow(expect.objectContaining({ code: 'MQLITE_ABORTED' }));
  });

  it('yields each message once when for await and for...of take turns on one reader', async () => {
    await publishMany(stream, 300);
    const reader = stream.read('first', { limit: 250 });
    expect((await reader.next()).value?.offset).toBe(1);
    expect([...reader].map((e) => e.offset)).toEqual(Array.from({ length: 249 }, (_, i) => i + 2));
    expect((await reader.next()).done).toBe(true);

    const closing = stream.read('first');
    await closing.next();
    await stream.close();
    await expect(closing.next()).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
  });

  it('rejects with AbortedError when its signal aborts, pending or not', async () => {
    const controller = new AbortController();
    const reader = stream.read('first', { follow: true, signal: controller.signal });
    const pending = reader.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ code: 'MQLITE_ABORTED' });

    await publishMany(stream, 2);
    const second = new AbortController();
    const replay = stream.read('first', { signal: second.signal });
    expect((await replay.next()).value?.offset).toBe(1);
    second.abort();
    await expect(replay.next()).rejects.toMatchObject({ code: 'MQLITE_ABORTED' });
  });

  it('ends a following reader with MQLITE_CLOSED when the stream closes', async () => {
    const reader = stream.read('next', { follow: true });
    const ended = expect(reader.next()).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await stream.close();
    await ended;
    expect(() => stream.read()).toThrow(expect.objectContaining({ code: 'MQLITE_CLOSED' }));
  });
});
