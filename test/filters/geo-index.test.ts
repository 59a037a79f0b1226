import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CompiledStreamFilter, GeoIndex, parseStreamFilter } from '../../src/filters/index.js';

const at = (lat: number, lon: number) => ({ 'x-geo-lat': lat, 'x-geo-lon': lon });

function compile(f: unknown, extra: Record<string, unknown> = {}): CompiledStreamFilter {
  return parseStreamFilter({ 'x-stream-filter': f, ...extra })!;
}

const circle = (lat: number, lon: number, radius_km: number) =>
  compile({ 'geo-within-radius': { lat, lon, radius_km } });

function matchesOf(index: GeoIndex<string>, headers: Record<string, unknown>): string[] {
  const ids: string[] = [];
  index.forEachMatch(headers, (id) => ids.push(id));
  return ids.sort();
}

describe('geo index of consumers', () => {
  it('indexes only filters whose matches are bounded by a geo region', () => {
    const index = new GeoIndex<string>();
    expect(index.insert('geo', circle(0, 0, 10))).toBe(true);
    expect(index.insert('plain', compile('foo'))).toBe(false);
    const box = { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 1 } };
    expect(index.insert('unfiltered', compile(box, { 'x-stream-match-unfiltered': true }))).toBe(
      false,
    );
    expect(index.insert('any', compile([box, 'foo'], { 'x-filter-match-type': 'any' }))).toBe(
      false,
    );
    expect(index.size).toBe(1);
    expect(index.has('plain')).toBe(false);
  });

  it('finds the consumers whose filter matches the point', () => {
    const index = new GeoIndex<string>();
    index.insert('paris', circle(48.8566, 2.3522, 20));
    index.insert('london', circle(51.5074, -0.1278, 20));
    index.insert(
      'france',
      compile({ 'geo-bbox': { min_lat: 42, max_lat: 51, min_lon: -5, max_lon: 8 } }),
    );
    expect(matchesOf(index, at(48.86, 2.35))).toEqual(['france', 'paris']);
    expect(matchesOf(index, at(51.5, -0.12))).toEqual(['london']);
    expect(matchesOf(index, at(0, 0))).toEqual([]);
    expect(matchesOf(index, {})).toEqual([]);
    expect(matchesOf(index, at(Number.NaN, 2))).toEqual([]);
  });

  it('checks the non-geo parts of an indexed filter', () => {
    const index = new GeoIndex<string>();
    index.insert(
      'red-paris',
      compile({ color: 'red', 'geo-within-radius': { lat: 48.85, lon: 2.35, radius_km: 20 } }),
    );
    expect(matchesOf(index, { ...at(48.85, 2.35), color: 'red' })).toEqual(['red-paris']);
    expect(matchesOf(index, { ...at(48.85, 2.35), color: 'blue' })).toEqual([]);
  });

  it('finds circles across the antimeridian from both sides', () => {
    const index = new GeoIndex<string>();
    index.insert('fiji', circle(-17, 179.9, 50));
    expect(matchesOf(index, at(-17, -179.9))).toEqual(['fiji']);
    expect(matchesOf(index, at(-17, 179.8))).toEqual(['fiji']);
  });

  it('visits a consumer with overlapping regions once', () => {
    const index = new GeoIndex<string>();
    const boxes = [
      { 'geo-bbox': { min_lat: 0, max_lat: 10, min_lon: 0, max_lon: 10 } },
      { 'geo-bbox': { min_lat: 5, max_lat: 15, min_lon: 5, max_lon: 15 } },
    ];
    index.insert('both', compile(boxes, { 'x-filter-match-type': 'any' }));
    expect(matchesOf(index, at(7, 7))).toEqual(['both']);
  });

  it('forgets removed consumers and replaces a filter under the same id', () => {
    const index = new GeoIndex<string>();
    index.insert('a', circle(0, 0, 10));
    expect(index.remove('a')).toBe(true);
    expect(index.remove('a')).toBe(false);
    expect(matchesOf(index, at(0, 0))).toEqual([]);
    index.insert('b', circle(0, 0, 10));
    index.insert('b', circle(40, 40, 10));
    expect(matchesOf(index, at(0, 0))).toEqual([]);
    expect(matchesOf(index, at(40, 40))).toEqual(['b']);
    expect(index.size).toBe(1);
    index.clear();
    expect(index.size).toBe(0);
  });

  it('allows a visitor to search again', () => {
    const index = new GeoIndex<string>();
    index.insert('a', circle(0, 0, 100));
    index.insert('b', circle(0.1, 0.1, 100));
    const seen: string[] = [];
    index.search(0, 0, (outer) => {
      index.search(0.05, 0.05, (inner) => seen.push(`${outer}/${inner}`));
    });
    expect(seen.sort()).toEqual(['a/a', 'a/b', 'b/a', 'b/b']);
  });

  it('agrees with asking every consumer', () => {
    const filterArb = fc.oneof(
      fc
        .tuple(
          fc.double({ min: -90, max: 90, noNaN: true }),
          fc.double({ min: -180, max: 180, noNaN: true }),
          fc.double({ min: 1, max: 3000, noNaN: true }),
        )
        .map(([lat, lon, r]) => circle(lat, lon, r)),
      fc
        .tuple(fc.integer({ min: -90, max: 90 }), fc.integer({ min: -180, max: 180 }))
        .map(([lat, lon]) =>
          compile({
            'geo-bbox': {
              min_lat: lat,
              max_lat: Math.min(90, lat + 20),
              min_lon: lon,
              max_lon: Math.min(180, lon + 30),
            },
          }),
        ),
    );
    const polygonArb = fc
      .tuple(fc.integer({ min: -80, max: 80 }), fc.integer({ min: -170, max: 170 }), fc.boolean())
      .map(([lat, lon, any]) =>
        compile(
          [
            {
              'geo-polygon': {
                points: [
                  [lat, lon],
                  [lat + 10, lon],
                  [lat, lon + 10],
                ],
              },
            },
            'tag',
          ],
          { 'x-filter-match-type': any ? 'any' : 'all' },
        ),
      );
    const pointArb = fc.tuple(
      fc.oneof(fc.integer({ min: -90, max: 90 }), fc.double({ min: -90, max: 90, noNaN: true })),
      fc.oneof(
        fc.integer({ min: -180, max: 180 }),
        fc.double({ min: -180, max: 180, noNaN: true }),
      ),
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(filterArb, polygonArb), { maxLength: 40 }),
        fc.array(pointArb, { maxLength: 20 }),
        (filters, points) => {
          const index = new GeoIndex<string>();
          const plain: string[] = [];
          for (const [i, f] of filters.entries()) {
            if (!index.insert(String(i), f)) plain.push(String(i));
          }
          for (const [lat, lon] of points) {
            const headers = { ...at(lat, lon), 'x-stream-filter-value': 'tag' };
            const naive = filters.flatMap((f, i) => (f.matches(headers) ? [String(i)] : [])).sort();
            const found = [
              ...matchesOf(index, headers),
              ...plain.filter((id) => filters[Number(id)]!.matches(headers)),
            ];
            expect(found.sort()).toEqual(naive);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
  it('agrees with asking every consumer while thousands come and go between searches', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const index = new GeoIndex<string>();
    const live = new Map<string, CompiledStreamFilter>();
    for (let step = 0; step < 3000; step++) {
      const id = String(Math.floor(random() * 1500));
      if (random() < 0.25) {
        expect(index.remove(id)).toBe(live.delete(id));
      } else {
        const f =
          random() < 0.8
            ? circle(40 + 10 * random(), 10 * random(), 10 + 200 * random())
            : compile({ 'geo-bbox': { min_lat: 40, max_lat: 41, min_lon: 0, max_lon: 1 } });
        index.insert(id, f);
        live.set(id, f);
      }
      if (step % 7 !== 0) continue;
      const headers = at(40 + 10 * random(), 10 * random());
      const naive = [...live].flatMap(([key, f]) => (f.matches(headers) ? [key] : [])).sort();
      expect(matchesOf(index, headers)).toEqual(naive);
    }
    expect(index.size).toBe(live.size);
  });

  it('reports built consumers with several boxes once, and none removed after the build', () => {
    const index = new GeoIndex<string>();
    const live = new Map<string, CompiledStreamFilter>();
    // Circles across the antimeridian and beside it, every tenth consumer two overlapping boxes:
    // enough to be built.
    const overlapping = [
      { 'geo-bbox': { min_lat: -10, max_lat: 0, min_lon: 179, max_lon: 180 } },
      { 'geo-bbox': { min_lat: -6, max_lat: 5, min_lon: 179.5, max_lon: 180 } },
    ];
    for (let i = 0; i < 200; i++) {
      const f =
        i % 10 === 3
          ? compile(overlapping, { 'x-filter-match-type': 'any' })
          : circle(-20 + (i % 40), i % 2 === 0 ? 179.8 : -179.5, 60 + i);
      index.insert(String(i), f);
      live.set(String(i), f);
    }
    const check = () => {
      for (const [lat, lon] of [
        [-5, 179.9],
        [-5, -179.9],
        [10, 180],
        [0, -179.2],
      ] as const) {
        const headers = at(lat, lon);
        const naive = [...live].flatMap(([id, f]) => (f.matches(headers) ? [id] : [])).sort();
        expect(matchesOf(index, headers)).toEqual(naive);
      }
    };
    check();
    // Fewer than a quarter removed: the built tree stays and skips them.
    for (let i = 0; i < 200; i += 5) {
      index.remove(String(i));
      live.delete(String(i));
    }
    check();
    // Removed from inside a visit: the search goes on with what it found.
    const visited: string[] = [];
    index.forEachMatch(at(-5, 179.9), (id) => {
      visited.push(id);
      index.remove(id);
    });
    expect(visited.length).toBeGreaterThan(1);
    expect(new Set(visited).size).toBe(visited.length);
    expect(matchesOf(index, at(-5, 179.9))).toEqual([]);
  });
});
