import { describe, expect, it } from 'vitest';
import {
  type CompiledStreamFilter,
  parseStreamFilter,
  passesValueGate,
} from '../../src/filters/index.js';

function filter(f: unknown, extra: Record<string, unknown> = {}): CompiledStreamFilter {
  const compiled = parseStreamFilter({ 'x-stream-filter': f, ...extra });
  if (!compiled) throw new Error('expected a filter');
  return compiled;
}

const tagged = (value: unknown, more: Record<string, unknown> = {}) => ({
  'x-stream-filter-value': value,
  ...more,
});

describe('string filters', () => {
  it('match a message tagged with the value', () => {
    const f = filter('foo');
    expect(f.matches(tagged('foo'))).toBe(true);
    expect(f.matches(tagged('bar'))).toBe(false);
    expect(f.matches(tagged('foobar'))).toBe(false);
    expect(f.matches({})).toBe(false);
    expect(f.matches(undefined)).toBe(false);
  });

  it('read a comma list on the message, trimming pieces', () => {
    const f = filter('foo');
    expect(f.matches(tagged('bar, foo ,baz'))).toBe(true);
    expect(f.matches(tagged(' foo '))).toBe(true);
    expect(f.matches(tagged('bar,baz'))).toBe(false);
    expect(f.matches(tagged(''))).toBe(false);
  });

  it('take a number on the message as its decimal string', () => {
    expect(filter('42').matches(tagged(42))).toBe(true);
    expect(filter('1.5').matches(tagged(1.5))).toBe(true);
    expect(filter('42').matches(tagged(42n))).toBe(true);
    expect(filter('42').matches(tagged(43))).toBe(false);
  });

  it("need every value with match type 'all' (the default)", () => {
    const f = filter('foo,bar');
    expect(f.matches(tagged('foo'))).toBe(false);
    expect(f.matches(tagged('bar,foo'))).toBe(true);
    expect(f.matches(tagged('foo,baz,bar'))).toBe(true);
  });

  it("need one value with match type 'any'", () => {
    const f = filter('foo,bar', { 'x-filter-match-type': 'any' });
    expect(f.matches(tagged('bar'))).toBe(true);
    expect(f.matches(tagged('baz, foo'))).toBe(true);
    expect(f.matches(tagged('baz'))).toBe(false);
  });
  it('answer the same for a list seen again, past hundreds of distinct lists', () => {
    const all = filter('a,b');
    const any = filter('a,b', { 'x-filter-match-type': 'any' });
    const lists = Array.from({ length: 600 }, (_, i) => (i % 3 === 0 ? `a,x${i},b` : `x${i},b`));
    for (let round = 0; round < 2; round++) {
      for (const [i, list] of lists.entries()) {
        expect(all.matches(tagged(list))).toBe(i % 3 === 0);
        expect(any.matches(tagged(list))).toBe(true);
        expect(any.matches(tagged(list.replace(',b', ',c')))).toBe(i % 3 === 0);
      }
    }
  });
});

describe('key-value filters', () => {
  it('match a header whose string rendering equals the value', () => {
    const f = filter({ region: 'eu' });
    expect(f.matches({ region: 'eu' })).toBe(true);
    expect(f.matches({ region: 'us' })).toBe(false);
    expect(f.matches({})).toBe(false);
  });

  it('compare numbers, bigints and booleans by their rendering', () => {
    expect(filter({ size: 5 }).matches({ size: '5' })).toBe(true);
    expect(filter({ size: '5' }).matches({ size: 5 })).toBe(true);
    expect(filter({ size: 5 }).matches({ size: 5n })).toBe(true);
    expect(filter({ ok: true }).matches({ ok: 'true' })).toBe(true);
    expect(filter({ size: '5.0' }).matches({ size: 5 })).toBe(false);
  });

  it('never match a header without a string rendering', () => {
    const f = filter({ when: 'x' });
    for (const value of [null, undefined, new Date(0), new Uint8Array(1), ['x'], { x: 1 }]) {
      expect(f.matches({ when: value })).toBe(false);
    }
  });

  it('combine with string filters under the match type', () => {
    const all = filter({ 'x-stream-filter': 'foo', region: 'eu' });
    expect(all.matches(tagged('foo', { region: 'eu' }))).toBe(true);
    expect(all.matches(tagged('foo', { region: 'us' }))).toBe(false);
    const any = filter(
      { 'x-stream-filter': 'foo', region: 'eu' },
      { 'x-filter-match-type': 'any' },
    );
    expect(any.matches(tagged('bar', { region: 'eu' }))).toBe(true);
    expect(any.matches(tagged('bar', { region: 'us' }))).toBe(false);
  });
});

describe('geo filters in a consumer filter', () => {
  const paris = { 'x-geo-lat': 48.8566, 'x-geo-lon': 2.3522 };
  const london = { 'x-geo-lat': 51.5074, 'x-geo-lon': -0.1278 };

  it('match messages within a radius', () => {
    const f = filter({ 'geo-within-radius': { lat: 48.85, lon: 2.35, radius_km: 50 } });
    expect(f.matches(paris)).toBe(true);
    expect(f.matches(london)).toBe(false);
  });

  it('match messages inside a box or polygon', () => {
    const box = filter({ 'geo-bbox': { min_lat: 48, max_lat: 49, min_lon: 2, max_lon: 3 } });
    expect(box.matches(paris)).toBe(true);
    expect(box.matches(london)).toBe(false);
    const poly = filter({
      'geo-polygon': {
        points: [
          [48, 2],
          [49, 2],
          [49, 3],
          [48, 3],
        ],
      },
    });
    expect(poly.matches(paris)).toBe(true);
    expect(poly.matches(london)).toBe(false);
  });

  it('match nothing for missing, non-numeric or out-of-range coordinates, without failing', () => {
    const f = filter({ 'geo-bbox': { min_lat: -90, max_lat: 90, min_lon: -180, max_lon: 180 } });
    expect(f.matches({ 'x-geo-lat': 0, 'x-geo-lon': 0 })).toBe(true);
    for (const bad of [
      {},
      { 'x-geo-lat': 0 },
      { 'x-geo-lon': 0 },
      { 'x-geo-lat': '0', 'x-geo-lon': '0' },
      { 'x-geo-lat': 90.0001, 'x-geo-lon': 0 },
      { 'x-geo-lat': 0, 'x-geo-lon': -180.5 },
      { 'x-geo-lat': Number.NaN, 'x-geo-lon': 0 },
      { 'x-geo-lat': Number.POSITIVE_INFINITY, 'x-geo-lon': 0 },
      { 'x-geo-lat': null, 'x-geo-lon': 0 },
    ]) {
      expect(f.matches(bad)).toBe(false);
    }
  });

  it('accept integer and bigint coordinates on messages', () => {
    const f = filter({ 'geo-bbox': { min_lat: 10, max_lat: 10, min_lon: 20, max_lon: 20 } });
    expect(f.matches({ 'x-geo-lat': 10, 'x-geo-lon': 20 })).toBe(true);
    expect(f.matches({ 'x-geo-lat': 10n, 'x-geo-lon': 20n })).toBe(true);
  });
});

describe('match-unfiltered', () => {
  it('delivers messages without x-stream-filter-value whatever the filters say', () => {
    const f = filter(
      { region: 'eu', 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 } },
      {
        'x-stream-match-unfiltered': true,
      },
    );
    expect(f.matches({ region: 'us' })).toBe(true);
    expect(f.matches(undefined)).toBe(true);
    expect(f.matches({ 'x-stream-filter-value': null })).toBe(true);
  });

  it('evaluates the filters for messages that carry the header', () => {
    const f = filter('foo', { 'x-stream-match-unfiltered': true });
    expect(f.matches(tagged('foo'))).toBe(true);
    expect(f.matches(tagged('bar'))).toBe(false);
    expect(f.matches(tagged(''))).toBe(false);
  });

  it('is off by default: untagged messages fail string filters', () => {
    expect(filter('foo').matches({})).toBe(false);
  });
});

describe('compiled filter shape', () => {
  it('exposes the match type and match-unfiltered', () => {
    const f = filter('a', { 'x-filter-match-type': 'any', 'x-stream-match-unfiltered': true });
    expect(f.matchType).toBe('any');
    expect(f.matchUnfiltered).toBe(true);
  });

  it("bounds the geo region of 'all' filters by their tightest geo filter", () => {
    const f = filter({
      region: 'eu',
      'geo-bbox': { min_lat: 0, max_lat: 10, min_lon: 0, max_lon: 10 },
      'geo-polygon': {
        points: [
          [1, 1],
          [2, 1],
          [2, 2],
        ],
      },
    });
    expect(f.geoRegion).toEqual([{ minLat: 1, maxLat: 2, minLon: 1, maxLon: 2 }]);
  });

  it("bounds the geo region of 'any' filters only when every filter is geo", () => {
    const boxes = [
      { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 } },
      { 'geo-bbox': { min_lat: 5, max_lat: 6, min_lon: 5, max_lon: 6 } },
    ];
    const any = { 'x-filter-match-type': 'any' };
    expect(filter(boxes, any).geoRegion).toHaveLength(2);
    expect(filter([...boxes, 'foo'], any).geoRegion).toBeUndefined();
  });

  it('has no geo region without geo filters or with match-unfiltered', () => {
    expect(filter('foo').geoRegion).toBeUndefined();
    const box = { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 } };
    expect(filter(box).geoRegion).toBeDefined();
    expect(filter(box, { 'x-stream-match-unfiltered': true }).geoRegion).toBeUndefined();
  });

  it('gates on filter values only where they alone can rule a message out', () => {
    const box = { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 } };
    const anyType = { 'x-filter-match-type': 'any' };
    const passes = (f: CompiledStreamFilter, key: string | undefined) =>
      passesValueGate(f.valueGate!, key);
    const all = filter('a,b');
    expect(['a,b', ' b , a,c', 'a', '', undefined].map((k) => passes(all, k))).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    const any = filter('a,b', anyType);
    expect(['b', 'c', undefined].map((k) => passes(any, k))).toEqual([true, false, false]);
    expect(passes(filter('a', { 'x-stream-match-unfiltered': true }), undefined)).toBe(true);
    // 'all': the other filters only narrow what the values let through.
    expect(passes(filter({ 'x-stream-filter': 'a', color: 'red', ...box }), 'a')).toBe(true);
    // 'any': a key-value or geo filter may match whatever the values are; without values there
    // is nothing to gate on.
    expect(filter(['a', box], anyType).valueGate).toBeUndefined();
    expect(filter({ 'x-stream-filter': 'a', color: 'red' }, anyType).valueGate).toBeUndefined();
    expect(filter(box).valueGate).toBeUndefined();
    expect(filter({ color: 'red' }).valueGate).toBeUndefined();
  });
});
