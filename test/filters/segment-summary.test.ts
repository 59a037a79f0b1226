import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CompiledStreamFilter,
  mayMatch,
  parseStreamFilter,
  type SegmentSummary,
  SegmentSummaryBuilder,
  type SegmentSummaryOptions,
} from '../../src/filters/index.js';

type Headers = Record<string, unknown> | undefined;

function compile(f: unknown, extra: Record<string, unknown> = {}): CompiledStreamFilter {
  return parseStreamFilter({ 'x-stream-filter': f, ...extra })!;
}

/** Builds a summary and sends it through JSON, as the stream's MetaStore would. */
function summarize(messages: Headers[], options?: SegmentSummaryOptions): SegmentSummary {
  const builder = new SegmentSummaryBuilder(options);
  for (const h of messages) builder.add(h);
  return JSON.parse(JSON.stringify(builder));
}

describe('segment summaries', () => {
  it('record filter values, untagged messages and the box of coordinates', () => {
    const s = summarize([
      { 'x-stream-filter-value': 'a, b' },
      { 'x-stream-filter-value': 7, 'x-geo-lat': 10, 'x-geo-lon': -20 },
      { 'x-geo-lat': -5, 'x-geo-lon': 30 },
      { 'x-geo-lat': 95, 'x-geo-lon': 0 },
    ]);
    expect(s).toEqual({
      version: 1,
      count: 4,
      unfiltered: true,
      values: ['a', 'b', '7'],
      bloom: null,
      geo: { minLat: -5, maxLat: 10, minLon: -20, maxLon: 30 },
    });
  });

  it('counts a message whose values are in already, and its coordinates, without its values', () => {
    const builder = new SegmentSummaryBuilder();
    builder.add({ 'x-stream-filter-value': 'a' });
    builder.add({ 'x-stream-filter-value': 'a', 'x-geo-lat': 1, 'x-geo-lon': 2 }, true);
    // The caller vouches for the values: a value it vouches for wrongly is not added.
    builder.add({ 'x-stream-filter-value': 'b' }, true);
    builder.add(undefined, true);
    expect(builder.toJSON()).toMatchObject({
      count: 4,
      unfiltered: true,
      values: ['a'],
      geo: { minLat: 1, maxLat: 1, minLon: 2, maxLon: 2 },
    });
  });

  it('lets a reader skip segments without the wanted value', () => {
    const s = summarize([{ 'x-stream-filter-value': 'a' }, { 'x-stream-filter-value': 'b' }]);
    expect(mayMatch(compile('a'), s)).toBe(true);
    expect(mayMatch(compile('c'), s)).toBe(false);
    expect(mayMatch(compile('a,c'), s)).toBe(false);
    expect(mayMatch(compile('a,c', { 'x-filter-match-type': 'any' }), s)).toBe(true);
    expect(mayMatch(compile('c', { 'x-stream-match-unfiltered': true }), s)).toBe(false);
  });

  it('never skips untagged messages for a match-unfiltered consumer', () => {
    const s = summarize([{ other: 1 }]);
    expect(mayMatch(compile('a'), s)).toBe(false);
    expect(mayMatch(compile('a', { 'x-stream-match-unfiltered': true }), s)).toBe(true);
  });

  it('never skips segments for key-value filters', () => {
    const s = summarize([{ 'x-stream-filter-value': 'a' }]);
    expect(mayMatch(compile({ color: 'red' }), s)).toBe(true);
  });

  it('skips segments whose coordinates lie outside the geo filter', () => {
    const s = summarize([{ 'x-geo-lat': 48, 'x-geo-lon': 2 }]);
    expect(
      mayMatch(compile({ 'geo-within-radius': { lat: 48.1, lon: 2, radius_km: 20 } }), s),
    ).toBe(true);
    expect(mayMatch(compile({ 'geo-within-radius': { lat: 51, lon: 0, radius_km: 20 } }), s)).toBe(
      false,
    );
    expect(
      mayMatch(
        compile({ 'geo-within-radius': { lat: 51, lon: 0, radius_km: 20 } }),
        summarize([{}]),
      ),
    ).toBe(false);
  });

  it('skips an empty segment', () => {
    expect(mayMatch(compile('a', { 'x-stream-match-unfiltered': true }), summarize([]))).toBe(
      false,
    );
  });

  it('switches to a Bloom filter past the exact-value limit and stays correct', () => {
    const tagged = Array.from({ length: 500 }, (_, i) => ({ 'x-stream-filter-value': `v${i}` }));
    const s = summarize(tagged, { maxExactValues: 16 });
    expect(s.values).toBeNull();
    expect(s.bloom).not.toBeNull();
    for (let i = 0; i < 500; i++) expect(mayMatch(compile(`v${i}`), s)).toBe(true);
    let falsePositives = 0;
    for (let i = 500; i < 1500; i++) if (mayMatch(compile(`v${i}`), s)) falsePositives++;
    expect(falsePositives).toBeLessThan(50);
  });

  it('continues a persisted summary', () => {
    const options = { maxExactValues: 4 };
    const first = new SegmentSummaryBuilder(options);
    first.add({ 'x-stream-filter-value': 'a', 'x-geo-lat': 1, 'x-geo-lon': 1 });
    const resumed = new SegmentSummaryBuilder(options, JSON.parse(JSON.stringify(first)));
    resumed.add({ 'x-stream-filter-value': 'b,c,d,e', 'x-geo-lat': 2, 'x-geo-lon': 3 });
    resumed.add(undefined);
    const again = new SegmentSummaryBuilder(options, resumed.toJSON());
    again.add({ 'x-stream-filter-value': 'f' });
    const s = again.toJSON();
    expect(s.count).toBe(4);
    expect(s.unfiltered).toBe(true);
    expect(s.geo).toEqual({ minLat: 1, maxLat: 2, minLon: 1, maxLon: 3 });
    for (const v of 'abcdef') expect(mayMatch(compile(v), s)).toBe(true);
  });

  it('rejects invalid sizing options', () => {
    expect(() => new SegmentSummaryBuilder({ bloomBits: 12 })).toThrow(RangeError);
    expect(() => new SegmentSummaryBuilder({ maxExactValues: 0 })).toThrow(RangeError);
  });

  it('never skips a segment that holds a match', () => {
    const values = ['a', 'b', 'c', 'd', 'e', 'f'];
    const valueList = fc
      .array(fc.constantFrom(...values), { maxLength: 3 })
      .map((v) => v.join(','));
    const lat = fc.double({ min: -90, max: 90, noNaN: true });
    const lon = fc.double({ min: -180, max: 180, noNaN: true });
    const tableArb = fc.record(
      {
        'x-stream-filter': valueList,
        color: fc.constantFrom('red', 'blue'),
        'geo-within-radius': fc.record({
          lat,
          lon,
          radius_km: fc.double({ min: 1, max: 4000, noNaN: true }),
        }),
        'geo-bbox': fc.tuple(lat, lat, lon, lon).map(([a, b, c, d]) => ({
          min_lat: Math.min(a, b),
          max_lat: Math.max(a, b),
          min_lon: Math.min(c, d),
          max_lon: Math.max(c, d),
        })),
      },
      { requiredKeys: [] },
    );
    const argsArb = fc.record({
      'x-stream-filter': fc.oneof(
        valueList,
        tableArb,
        fc.array(fc.oneof(valueList, tableArb), { maxLength: 3 }),
      ),
      'x-filter-match-type': fc.constantFrom('all', 'any'),
      'x-stream-match-unfiltered': fc.boolean(),
    });
    const messageArb = fc.option(
      fc.record(
        {
          'x-stream-filter-value': valueList,
          color: fc.constantFrom('red', 'blue'),
          'x-geo-lat': lat,
          'x-geo-lon': lon,
        },
        { requiredKeys: [] },
      ),
      { nil: undefined },
    );
    fc.assert(
      fc.property(
        argsArb,
        fc.array(messageArb, { maxLength: 30 }),
        fc.integer({ min: 1, max: 6 }),
        (args, messages, maxExactValues) => {
          // Random filters can filter nothing: no filter, no summary to check.
          const filter = parseStreamFilter(args);
          if (!filter) return;
          const s = summarize(messages, { maxExactValues, bloomBits: 64 });
          if (messages.some((h) => filter.matches(h))) expect(mayMatch(filter, s)).toBe(true);
        },
      ),
      { numRuns: 1500 },
    );
  });
});
