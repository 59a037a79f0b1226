import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../src/errors.js';
import { parseFilterArgs, parseStreamFilter } from '../../src/filters/index.js';

function refused(args: Record<string, unknown>, detail: string, strict = false) {
  let error: unknown;
  try {
    parseStreamFilter(args, strict);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(PreconditionFailedError);
  expect((error as PreconditionFailedError).replyCode).toBe(406);
  expect((error as Error).message).toBe(`PRECONDITION_FAILED - ${detail}`);
}

const filterOf = (f: unknown, extra: Record<string, unknown> = {}) =>
  parseFilterArgs({ 'x-stream-filter': f, ...extra });

describe('consumer filter arguments', () => {
  it('means no filter when x-stream-filter is absent', () => {
    expect(parseStreamFilter(undefined)).toBeUndefined();
    expect(parseStreamFilter({})).toBeUndefined();
    expect(parseStreamFilter({ 'x-stream-offset': 'first' })).toBeUndefined();
    expect(parseStreamFilter({ 'x-stream-filter': undefined })).toBeUndefined();
  });

  const EMPTY = [null, '', ' , ,', {}, [], [[], {}], [null], { 'x-stream-filter': '' }];

  it('means no filter when x-stream-filter filters nothing, as on LavinMQ', () => {
    for (const empty of EMPTY) {
      expect(
        parseStreamFilter({ 'x-stream-filter': empty }),
        JSON.stringify(empty),
      ).toBeUndefined();
    }
  });

  it('in strict mode, refuses a filter that filters nothing, as it would pass every message', () => {
    for (const empty of EMPTY) {
      refused({ 'x-stream-filter': empty }, 'x-stream-filter must hold at least one filter', true);
    }
  });

  it('bounds the work a filter can ask for', () => {
    const ring = (n: number) =>
      Array.from({ length: n }, (_, i) => [
        10 * Math.sin((2 * Math.PI * i) / n),
        10 * Math.cos((2 * Math.PI * i) / n),
      ]);
    expect(filterOf({ 'geo-polygon': { points: ring(10_000) } })?.filters).toHaveLength(1);
    refused(
      { 'x-stream-filter': { 'geo-polygon': { points: ring(10_002) } } },
      'geo-polygon: points must hold at most 10000 points, got 10002',
    );
    const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
    expect(filterOf(values(10_000))?.filters).toHaveLength(10_000);
    refused(
      { 'x-stream-filter': values(10_001).join(',') },
      'x-stream-filter must hold at most 10000 filters',
    );
    refused(
      { 'x-stream-filter': [values(5_000), Object.fromEntries(values(5_001).map((v) => [v, 1]))] },
      'x-stream-filter must hold at most 10000 filters',
    );
  });

  it('splits a string into trimmed values, one filter per piece', () => {
    expect(filterOf(' foo , bar,,baz ')?.filters).toEqual([
      { kind: 'value', value: 'foo' },
      { kind: 'value', value: 'bar' },
      { kind: 'value', value: 'baz' },
    ]);
  });

  it('reads a table: x-stream-filter values, geo filters, and key-value filters', () => {
    const spec = filterOf({
      'x-stream-filter': 'a, b',
      region: 'eu',
      size: 5,
      big: 7n,
      flag: true,
      'geo-within-radius': { lat: 1, lon: 2, radius_km: 3 },
      'geo-bbox': { min_lat: -1, max_lat: 1, min_lon: -2, max_lon: 2 },
      'geo-polygon': {
        points: [
          [0, 0],
          [0, 1],
          [1, 1],
        ],
      },
    });
    expect(spec?.filters).toEqual([
      { kind: 'value', value: 'a' },
      { kind: 'value', value: 'b' },
      { kind: 'header', key: 'region', value: 'eu' },
      { kind: 'header', key: 'size', value: '5' },
      { kind: 'header', key: 'big', value: '7' },
      { kind: 'header', key: 'flag', value: 'true' },
      { kind: 'radius', lat: 1, lon: 2, radiusKm: 3 },
      { kind: 'bbox', minLat: -1, maxLat: 1, minLon: -2, maxLon: 2 },
      {
        kind: 'polygon',
        points: [
          [0, 0],
          [0, 1],
          [1, 1],
        ],
      },
    ]);
  });

  it('parses arrays of strings, tables and arrays recursively', () => {
    expect(filterOf(['a', [{ k: 'v' }, ['b,c']], null])?.filters).toEqual([
      { kind: 'value', value: 'a' },
      { kind: 'header', key: 'k', value: 'v' },
      { kind: 'value', value: 'b' },
      { kind: 'value', value: 'c' },
    ]);
  });

  it("defaults the match type to 'all' and reads it case-insensitively", () => {
    expect(filterOf('a')?.matchType).toBe('all');
    expect(filterOf('a', { 'x-filter-match-type': 'ANY' })?.matchType).toBe('any');
    expect(filterOf('a', { 'x-filter-match-type': 'All' })?.matchType).toBe('all');
  });

  it('reads x-stream-match-unfiltered as a boolean, default false', () => {
    expect(filterOf('a')?.matchUnfiltered).toBe(false);
    expect(filterOf('a', { 'x-stream-match-unfiltered': true })?.matchUnfiltered).toBe(true);
  });

  it('drops a repeated closing point of a polygon', () => {
    const spec = filterOf({
      'geo-polygon': {
        points: [
          [0, 0],
          [0, 1],
          [1, 1],
          [0, 0],
        ],
      },
    });
    expect(spec?.filters[0]).toEqual({
      kind: 'polygon',
      points: [
        [0, 0],
        [0, 1],
        [1, 1],
      ],
    });
  });

  it('accepts integer, float and edge coordinates', () => {
    expect(
      filterOf({ 'geo-bbox': { min_lat: -90, max_lat: 90, min_lon: -180, max_lon: 180 } }),
    ).toBeDefined();
    expect(
      filterOf({ 'geo-within-radius': { lat: 90, lon: -180, radius_km: 0.001 } }),
    ).toBeDefined();
    expect(
      filterOf({ 'geo-bbox': { min_lat: 1.5, max_lat: 1.5, min_lon: 2, max_lon: 2 } }),
    ).toBeDefined();
  });
});

describe('invalid filter arguments fail with 406 naming the key', () => {
  it('refuses a filter of the wrong type', () => {
    const detail = 'x-stream-filter must be a string, table, or array';
    for (const bad of [5, true, 5n, new Date(), new Uint8Array(1), ['a', 7], [[false]]]) {
      refused({ 'x-stream-filter': bad }, detail);
    }
  });

  it('refuses a match type that is neither any nor all', () => {
    for (const bad of ['some', '', 1, true]) {
      refused(
        { 'x-stream-filter': 'a', 'x-filter-match-type': bad },
        "x-filter-match-type must be 'any' or 'all'",
      );
    }
  });

  it('refuses a non-boolean match-unfiltered', () => {
    for (const bad of ['true', 1, 0]) {
      refused(
        { 'x-stream-filter': 'a', 'x-stream-match-unfiltered': bad },
        'x-stream-match-unfiltered must be a boolean',
      );
    }
  });

  it('validates match type and match-unfiltered even without filters', () => {
    refused({ 'x-filter-match-type': 'x' }, "x-filter-match-type must be 'any' or 'all'");
    refused({ 'x-stream-match-unfiltered': 'yes' }, 'x-stream-match-unfiltered must be a boolean');
  });

  it('refuses a key-value filter whose value has no string rendering', () => {
    refused(
      { 'x-stream-filter': { region: { nested: 1 } } },
      "x-stream-filter: the value of 'region' must be a string, number, bigint or boolean",
    );
  });

  it('refuses radius filters without radius_km, with radius <= 0 or bad coordinates', () => {
    const radius = (v: unknown) => ({ 'x-stream-filter': { 'geo-within-radius': v } });
    refused(radius({ lat: 1, lon: 1 }), 'geo-within-radius: radius_km is required');
    refused(
      radius({ lat: 1, lon: 1, radius_km: 0 }),
      'geo-within-radius: radius_km must be greater than 0',
    );
    refused(
      radius({ lat: 1, lon: 1, radius_km: -5 }),
      'geo-within-radius: radius_km must be greater than 0',
    );
    refused(
      radius({ lat: 1, lon: 1, radius_km: '5' }),
      'geo-within-radius: radius_km must be a number',
    );
    refused(radius({ lat: 'x', lon: 1, radius_km: 1 }), 'geo-within-radius: lat must be a number');
    refused(
      radius({ lat: Number.NaN, lon: 1, radius_km: 1 }),
      'geo-within-radius: lat must be a number',
    );
    refused(radius({ lon: 1, radius_km: 1 }), 'geo-within-radius: lat is required');
    refused(
      radius({ lat: 90.5, lon: 1, radius_km: 1 }),
      'geo-within-radius: lat must be between -90 and 90',
    );
    refused(
      radius({ lat: 1, lon: -181, radius_km: 1 }),
      'geo-within-radius: lon must be between -180 and 180',
    );
    refused(radius('near'), 'geo-within-radius must be a table');
  });

  it('refuses bounding boxes with min > max or bad coordinates', () => {
    const bbox = (v: unknown) => ({ 'x-stream-filter': { 'geo-bbox': v } });
    const box = { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 };
    refused(bbox({ ...box, min_lat: 2 }), 'geo-bbox: min_lat must not be greater than max_lat');
    refused(
      bbox({ ...box, min_lon: 170, max_lon: -170 }),
      'geo-bbox: min_lon must not be greater than max_lon (boxes do not wrap the antimeridian)',
    );
    refused(bbox({ ...box, max_lat: 91 }), 'geo-bbox: max_lat must be between -90 and 90');
    refused(bbox({ ...box, min_lon: -180.1 }), 'geo-bbox: min_lon must be between -180 and 180');
    refused(bbox({ ...box, max_lon: null }), 'geo-bbox: max_lon is required');
    refused(bbox({ ...box, min_lat: [1] }), 'geo-bbox: min_lat must be a number');
  });

  it('refuses polygons with fewer than 3 points or points that are not [lat, lon] pairs', () => {
    const poly = (points: unknown) => ({ 'x-stream-filter': { 'geo-polygon': { points } } });
    refused(
      poly([
        [0, 0],
        [1, 1],
      ]),
      'geo-polygon: points must hold at least 3 points',
    );
    refused(
      poly([
        [0, 0],
        [1, 1],
        [0, 0],
      ]),
      'geo-polygon: points must hold at least 3 points',
    );
    refused(poly('0,0 1,1 2,2'), 'geo-polygon: points must be an array of [lat, lon] pairs');
    refused(poly(undefined), 'geo-polygon: points must be an array of [lat, lon] pairs');
    refused(
      poly([[0, 0], [1], [2, 2]]),
      'geo-polygon: points[1] must be a [lat, lon] pair of numbers',
    );
    refused(
      poly([
        [0, 0],
        [1, 1, 1],
        [2, 2],
      ]),
      'geo-polygon: points[1] must be a [lat, lon] pair of numbers',
    );
    refused(
      poly([
        [0, 0],
        [1, 1],
        ['2', 2],
      ]),
      'geo-polygon: points[2] must be a [lat, lon] pair of numbers',
    );
    refused(
      poly([[0, 0], { lat: 1, lon: 1 }, [2, 2]]),
      'geo-polygon: points[1] must be a [lat, lon] pair of numbers',
    );
    refused(
      poly([
        [0, 0],
        [1, 1],
        [95, 2],
      ]),
      'geo-polygon: points[2] latitude must be between -90 and 90',
    );
    refused(
      poly([
        [0, 0],
        [1, 200],
        [2, 2],
      ]),
      'geo-polygon: points[1] longitude must be between -180 and 180',
    );
    refused(
      {
        'x-stream-filter': {
          'geo-polygon': [
            [0, 0],
            [0, 1],
            [1, 1],
          ],
        },
      },
      'geo-polygon must be a table',
    );
  });

  it('finds errors inside nested arrays and tables', () => {
    refused(
      {
        'x-stream-filter': [
          'a',
          [{ 'x-stream-filter': { 'geo-within-radius': { lat: 0, lon: 0 } } }],
        ],
      },
      'geo-within-radius: radius_km is required',
    );
  });

  it('refuses a self-referencing filter array instead of looping', () => {
    const loop: unknown[] = ['a'];
    loop.push(loop);
    refused({ 'x-stream-filter': loop }, 'x-stream-filter is nested too deeply');
  });
});
