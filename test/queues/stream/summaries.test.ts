import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseStreamFilter } from '../../../src/filters/index.js';
import type { Message } from '../../../src/message/message.js';
import type { FieldTable } from '../../../src/message/types.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import {
  FilterScan,
  FilterSummaries,
  SUMMARY_BLOCK,
} from '../../../src/queues/stream/summaries.js';
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

const scanOf = (args: Record<string, unknown>) => new FilterScan(parseStreamFilter(args)!);

describe('filter summaries', () => {
  it('skip closed blocks that cannot match, and the open block only by its keys', async () => {
    const ns = await memoryStorage().namespace('s');
    const summaries = new FilterSummaries(ns.meta, 1, 1);
    const red = { 'x-stream-filter-value': 'red' };
    for (let o = 1; o <= 2 * SUMMARY_BLOCK + 5; o++) summaries.add(o, red);
    const end = 2 * SUMMARY_BLOCK + 6;
    const blue = scanOf({ 'x-stream-filter': 'blue' });
    const redFilter = scanOf({ 'x-stream-filter': 'red' });
    // A geo filter has no key to go by: the open block is read.
    const geo = scanOf({
      'x-stream-filter': { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 } },
    });
    expect(summaries.skip(blue, 1)).toBe(end);
    expect(blue.until).toBe(end);
    expect(summaries.skip(geo, 10)).toBe(2 * SUMMARY_BLOCK + 1);
    expect(geo.until).toBe(3 * SUMMARY_BLOCK + 1);
    expect(summaries.skip(redFilter, 10)).toBe(10);

    // Closed blocks persist in the metadata (their keys do not); a new instance resumes after
    // them.
    const again = new FilterSummaries(ns.meta, 1, end);
    expect(again.next).toBe(2 * SUMMARY_BLOCK + 1);
    expect(again.skip(blue, 1)).toBe(2 * SUMMARY_BLOCK + 1);
    again.dropBefore(SUMMARY_BLOCK + 1);
    expect(again.skip(blue, SUMMARY_BLOCK + 1)).toBe(2 * SUMMARY_BLOCK + 1);

    // A log that lost its tail (a crash) drops the summaries of blocks it no longer holds whole.
    const cut = new FilterSummaries(ns.meta, SUMMARY_BLOCK + 1, 2 * SUMMARY_BLOCK);
    expect(cut.next).toBe(SUMMARY_BLOCK + 1);
    expect(cut.skip(blue, SUMMARY_BLOCK + 1)).toBe(SUMMARY_BLOCK + 1);
  });

  it('find candidates inside a block by filter-value keys, and the runs they start', async () => {
    const ns = await memoryStorage().namespace('s');
    const summaries = new FilterSummaries(ns.meta, 1, 1);
    // 1-2 red, 3 none, 4 headers without a value, 5-6 blue, 7 the number 5, 8 red.
    const headers = [
      { 'x-stream-filter-value': 'red' },
      { 'x-stream-filter-value': 'red' },
      undefined,
      { other: 1 },
      { 'x-stream-filter-value': 'blue' },
      { 'x-stream-filter-value': 'blue' },
      { 'x-stream-filter-value': 5 },
      { 'x-stream-filter-value': 'red' },
    ];
    for (const [i, h] of headers.entries()) summaries.add(i + 1, h);
    const red = scanOf({ 'x-stream-filter': 'red' });
    expect([summaries.skip(red, 1), red.until]).toEqual([1, 3]);
    expect([summaries.skip(red, 3), red.until]).toEqual([8, 9]);
    expect([summaries.skip(red, 9), red.until]).toEqual([9, 9]);
    const blue = scanOf({ 'x-stream-filter': 'blue', 'x-stream-match-unfiltered': true });
    expect([summaries.skip(blue, 1), blue.until]).toEqual([3, 7]);
    const five = scanOf({ 'x-stream-filter': '5' });
    expect([summaries.skip(five, 1), five.until]).toEqual([7, 8]);
    // Keys added to the open block after a search count in the next one.
    summaries.add(9, { 'x-stream-filter-value': 'blue,green' });
    const green = scanOf({ 'x-stream-filter': 'green,blue' });
    expect([summaries.skip(green, 1), green.until]).toEqual([9, 10]);
    expect(summaries.skip(blue, 7)).toBe(9);
  });

  it('read what the dictionary of a block has no room for', async () => {
    const ns = await memoryStorage().namespace('s');
    const summaries = new FilterSummaries(ns.meta, 1, 1);
    // 300 distinct values, then one too long for what is left of the key text.
    for (let o = 1; o <= 300; o++) summaries.add(o, { 'x-stream-filter-value': `v${o}` });
    summaries.add(301, { 'x-stream-filter-value': `${'x'.repeat(5000)},v1` });
    const first = scanOf({ 'x-stream-filter': 'v1' });
    expect(summaries.skip(first, 1)).toBe(1);
    expect(summaries.skip(first, 2)).toBe(255);
    const late = scanOf({ 'x-stream-filter': 'v300' });
    expect(summaries.skip(late, 1)).toBe(255);
    expect(late.until).toBe(302);
    const none = scanOf({ 'x-stream-filter': 'v0' });
    expect(summaries.skip(none, 1)).toBe(255);
  });

  it('search a bounded stretch per call and forget the keys of dropped blocks', async () => {
    const ns = await memoryStorage().namespace('s');
    const summaries = new FilterSummaries(ns.meta, 1, 1);
    const total = 6 * SUMMARY_BLOCK;
    for (let o = 1; o <= total; o++) {
      summaries.add(o, { 'x-stream-filter-value': o % 2 === 1 ? 'red' : 'blue' });
    }
    expect(summaries.skip(scanOf({ 'x-stream-filter': 'blue' }), 1)).toBe(2);
    // Every summary holds both values, no message does: the keys are searched, in stretches.
    const both = scanOf({ 'x-stream-filter': 'red,blue' });
    const stop = summaries.skip(both, 1);
    expect(stop).toBe(4 * SUMMARY_BLOCK + 1);
    expect(both.until).toBe(stop);
    expect(summaries.skip(both, stop)).toBe(total + 1);
    // Dropped blocks lose their summaries and keys alike.
    summaries.dropBefore(5 * SUMMARY_BLOCK + 1);
    expect(summaries.skip(both, 5 * SUMMARY_BLOCK + 1)).toBe(total + 1);
    expect([summaries.skip(both, 1), both.until]).toEqual([1, SUMMARY_BLOCK + 1]);
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
    // 'all': no block holds both values, nor 'north' inside the southern box; the open block's
    // per-offset keys rule its messages out without reading them.
    expect(await replay({ 'x-stream-filter': 'north,south' }, 0)).toBe(0);
    expect(await replay({ 'x-stream-filter': { 'x-stream-filter': 'north', ...south } }, 0)).toBe(
      0,
    );
    // A geo filter alone has no key to go by: the open block is read.
    const equator = { 'geo-bbox': { min_lat: -1, max_lat: 1, min_lon: 0, max_lon: 20 } };
    expect(await replay({ 'x-stream-filter': equator }, 10)).toBe(10);
    // What may match everywhere is read everywhere.
    const any = { 'x-stream-filter': 'north,south,rare', 'x-filter-match-type': 'any' };
    expect(await replay(any, total)).toBe(total);
  });

  it('replays by per-offset keys exactly what reading every message delivers', async () => {
    // Small segments and a length limit: retention drops whole segments from the head.
    const args = {
      'x-stream-max-segment-size-bytes': 64 * 1024,
      'x-max-length': 2 * SUMMARY_BLOCK,
    };
    const openRetained = () => openStream(storage, { name: 'retained', arguments: args });
    await stream.close();
    stream = await openRetained();
    // Pseudo-random headers; the second block carries no filter value at all.
    const kinds: (FieldTable | undefined)[] = [
      { 'x-stream-filter-value': 'a' },
      { 'x-stream-filter-value': 'b', color: 'red' },
      { 'x-stream-filter-value': 'a,b', 'x-geo-lat': 1, 'x-geo-lon': 1 },
      { 'x-stream-filter-value': 5 },
      { 'x-stream-filter-value': '' },
      { color: 'red', 'x-geo-lat': 1, 'x-geo-lon': 1 },
      undefined,
    ];
    let seed = 7;
    const publish = async (count: number) => {
      for (let i = 0; i < count; i++) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        const block = Math.floor((stream.nextOffset - 1) / SUMMARY_BLOCK);
        const headers = kinds[block === 1 ? 5 + (seed % 2) : seed % kinds.length];
        void stream.publish('x', headers && { headers });
      }
      await settle();
    };
    const filters: Record<string, unknown>[] = [
      { 'x-stream-filter': 'a' },
      { 'x-stream-filter': 'a,b' },
      { 'x-stream-filter': 'b,5', 'x-filter-match-type': 'any' },
      { 'x-stream-filter': 'b', 'x-stream-match-unfiltered': true },
      { 'x-stream-filter': { 'x-stream-filter': 'b', color: 'red' } },
      { 'x-stream-filter': ['a', { color: 'red' }], 'x-filter-match-type': 'any' },
      { 'x-stream-filter': { 'geo-bbox': { min_lat: 0, max_lat: 2, min_lon: 0, max_lon: 2 } } },
      { 'x-stream-filter': 'nothing' },
    ];
    let round = 0;
    const check = async () => {
      round++;
      for (const [i, filter] of filters.entries()) {
        const compiled = parseStreamFilter(filter)!;
        const expected: number[] = [];
        for (const entry of stream.read('first')) {
          if (compiled.matches(entry.message.properties.headers)) expected.push(entry.offset);
        }
        const seen: Message[] = [];
        // Tracked from the first offset: what it passes over must not hold its offset back.
        const tag = `replay-${round}-${i}`;
        const tracked = { 'x-stream-offset': 'first', 'x-stream-automatic-offset-tracking': true };
        const sub = await stream.subscribe({ tag, args: { ...tracked, ...filter } }, (m) => {
          seen.push(m);
        });
        await settleUntil(() => seen.length >= expected.length);
        await settle();
        expect(offsetsOf(seen), JSON.stringify(filter)).toEqual(expected);
        // A consumer that settled nothing (its filter matched nothing) stores nothing.
        expect(stream.storedOffset(tag)).toBe(expected.length > 0 ? stream.nextOffset : undefined);
        await sub.cancel();
      }
    };
    await publish(2 * SUMMARY_BLOCK + 100);
    await check();
    await stream.close();
    await storage.reopen();
    stream = await openRetained();
    await publish(SUMMARY_BLOCK + 10);
    expect(stream.firstOffset).toBeGreaterThan(1);
    await check();
  });
});
