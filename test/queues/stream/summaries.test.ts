import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseStreamFilter } from '../../../src/filters/index.js';
import type { Message } from '../../../src/message/message.js';
import type { FieldTable } from '../../../src/message/types.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import { FilterSummaries, SUMMARY_BLOCK } from '../../../src/queues/stream/summaries.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import {
  countReads,
  offsetsOf,
  openStream,
  type ReadCounter,
  STORAGE_KINDS,
  settle,
  settleUntil,
  TestStorage,
} from './support.js';

describe('filter summaries', () => {
  it('lets a filter skip closed blocks that cannot match, never the open one', async () => {
    const ns = await memoryStorage().namespace('s');
    const summaries = new FilterSummaries(ns.meta, 1, 1);
    const red = { 'x-stream-filter-value': 'red' };
    for (let o = 1; o <= 2 * SUMMARY_BLOCK + 5; o++) summaries.add(o, red);
    const blue = parseStreamFilter({ 'x-stream-filter': 'blue' })!;
    const redFilter = parseStreamFilter({ 'x-stream-filter': 'red' })!;
    expect(summaries.skip(blue, 1)).toBe(2 * SUMMARY_BLOCK + 1);
    expect(summaries.skip(blue, 10)).toBe(2 * SUMMARY_BLOCK + 1);
    expect(summaries.skip(redFilter, 10)).toBe(10);

    // Closed blocks persist in the metadata; a new instance resumes after them.
    const again = new FilterSummaries(ns.meta, 1, 2 * SUMMARY_BLOCK + 6);
    expect(again.next).toBe(2 * SUMMARY_BLOCK + 1);
    expect(again.skip(blue, 1)).toBe(2 * SUMMARY_BLOCK + 1);
    again.dropBefore(SUMMARY_BLOCK + 1);
    expect(again.skip(blue, SUMMARY_BLOCK + 1)).toBe(2 * SUMMARY_BLOCK + 1);

    // A log that lost its tail (a crash) drops the summaries of blocks it no longer holds whole.
    const cut = new FilterSummaries(ns.meta, SUMMARY_BLOCK + 1, 2 * SUMMARY_BLOCK);
    expect(cut.next).toBe(SUMMARY_BLOCK + 1);
    expect(cut.skip(blue, SUMMARY_BLOCK + 1)).toBe(SUMMARY_BLOCK + 1);
  });
});

describe.each(STORAGE_KINDS)('filtered replay over summarized blocks on %s storage', (kind) => {
  let storage: TestStorage;
  let stream: StreamQueue;
  const counter: ReadCounter = { records: 0 };
  const open = () => openStream(storage, { storage: countReads(storage.storage, counter) });

  beforeEach(async () => {
    storage = new TestStorage(kind);
    stream = await open();
  });
  afterEach(async () => {
    await stream.close();
    await storage.dispose();
  });

  it('delivers exactly the matches, before and after a reopen', async () => {
    const total = 2 * SUMMARY_BLOCK + 10;
    const rare = new Set([5, SUMMARY_BLOCK + 7, total]);
    for (let o = 1; o <= total; o++) {
      void stream.publish('x', {
        headers: { 'x-stream-filter-value': rare.has(o) ? 'rare' : 'common' },
      });
    }
    await settle();
    const run = async () => {
      const seen: Message[] = [];
      const sub = await stream.subscribe(
        { args: { 'x-stream-offset': 'first', 'x-stream-filter': 'rare' } },
        (m) => {
          seen.push(m);
        },
      );
      await settleUntil(() => seen.length === rare.size);
      await sub.cancel();
      return offsetsOf(seen);
    };
    expect(await run()).toEqual([...rare]);
    await stream.close();
    await storage.reopen();
    stream = await open();
    expect(await run()).toEqual([...rare]);
  });

  it('reads only the blocks that may hold a match', async () => {
    // Two closed blocks: the first tagged 'north' in northern Europe, the second 'south' in the
    // south; then an open block of 10 'rare' messages at the equator.
    const total = 2 * SUMMARY_BLOCK + 10;
    for (let o = 1; o <= total; o++) {
      const [value, lat] =
        o <= SUMMARY_BLOCK ? ['north', 60] : o <= 2 * SUMMARY_BLOCK ? ['south', 40] : ['rare', 0];
      void stream.publish('x', {
        headers: { 'x-stream-filter-value': value, 'x-geo-lat': lat, 'x-geo-lon': 10 },
      });
    }
    await settle();
    /** Replays with a filter until `expected` messages arrived: how many were read? */
    const replay = async (args: Record<string, unknown>, expected: number) => {
      let delivered = 0;
      counter.records = 0;
      const sub = await stream.subscribe(
        { args: { 'x-stream-offset': 'first', ...(args as FieldTable) } },
        () => {
          delivered++;
        },
      );
      await settleUntil(() => delivered >= expected);
      await settle();
      await sub.cancel();
      expect(delivered).toBe(expected);
      return counter.records;
    };
    const south = { 'geo-bbox': { min_lat: 35, max_lat: 45, min_lon: 0, max_lon: 20 } };
    expect(await replay({ 'x-stream-filter': 'rare' }, 10)).toBe(10);
    expect(await replay({ 'x-stream-filter': south }, SUMMARY_BLOCK)).toBe(SUMMARY_BLOCK + 10);
    // 'all': no block holds both values, nor 'north' inside the southern box.
    expect(await replay({ 'x-stream-filter': 'north,south' }, 0)).toBe(10);
    expect(await replay({ 'x-stream-filter': { 'x-stream-filter': 'north', ...south } }, 0)).toBe(
      10,
    );
    // What may match everywhere is read everywhere.
    const any = { 'x-stream-filter': 'north,south,rare', 'x-filter-match-type': 'any' };
    expect(await replay(any, total)).toBe(total);
  });
});
