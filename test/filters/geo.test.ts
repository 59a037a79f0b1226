import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../src/errors.js';
import {
  checkGeoHeaders,
  haversineKm,
  parseStreamFilter,
  radiusBoxes,
} from '../../src/filters/index.js';
import { referenceHaversineKm } from './reference-filter.js';

const at = (lat: number, lon: number) => ({ 'x-geo-lat': lat, 'x-geo-lon': lon });

function geo(table: Record<string, unknown>) {
  return parseStreamFilter({ 'x-stream-filter': table })!;
}

/** The point `km` away from (lat, lon) along `bearing` degrees, on the 6371.0 km sphere. */
function destination(lat: number, lon: number, bearing: number, km: number): [number, number] {
  const rad = Math.PI / 180;
  const d = km / 6371.0;
  const p1 = lat * rad;
  const b = bearing * rad;
  const p2 = Math.asin(Math.sin(p1) * Math.cos(d) + Math.cos(p1) * Math.sin(d) * Math.cos(b));
  const l2 =
    lon * rad +
    Math.atan2(Math.sin(b) * Math.sin(d) * Math.cos(p1), Math.cos(d) - Math.sin(p1) * Math.sin(p2));
  const lonDeg = ((((l2 / rad + 180) % 360) + 360) % 360) - 180;
  return [p2 / rad, lonDeg];
}

describe('haversine distance', () => {
  it('uses a 6371.0 km sphere', () => {
    expect(haversineKm(0, 0, 0, 1)).toBeCloseTo((6371.0 * Math.PI) / 180, 9);
    expect(haversineKm(48.8566, 2.3522, 51.5074, -0.1278)).toBeCloseTo(343.56, 1);
    expect(haversineKm(90, 0, -90, 0)).toBeCloseTo(6371.0 * Math.PI, 6);
  });

  it('is short across the antimeridian', () => {
    expect(haversineKm(0, 179.9, 0, -179.9)).toBeCloseTo(haversineKm(0, 0, 0, 0.2), 9);
  });
});

describe('radius filters', () => {
  it('include a point exactly at the radius', () => {
    const d = haversineKm(10, 20, 10.3, 20.4);
    const f = geo({ 'geo-within-radius': { lat: 10, lon: 20, radius_km: d } });
    expect(f.matches(at(10.3, 20.4))).toBe(true);
    const g = geo({ 'geo-within-radius': { lat: 10, lon: 20, radius_km: d * (1 - 1e-12) } });
    expect(g.matches(at(10.3, 20.4))).toBe(false);
  });

  it('match across the antimeridian from either side', () => {
    const east = geo({ 'geo-within-radius': { lat: 0, lon: 179.9, radius_km: 50 } });
    expect(east.matches(at(0, -179.9))).toBe(true);
    expect(east.matches(at(0, 180))).toBe(true);
    expect(east.matches(at(0, -180))).toBe(true);
    expect(east.matches(at(0, -179))).toBe(false);
    const west = geo({ 'geo-within-radius': { lat: -10, lon: -180, radius_km: 30 } });
    expect(west.matches(at(-10, 179.9))).toBe(true);
    expect(west.matches(at(-10, 179))).toBe(false);
  });

  it('match every longitude near a pole the circle covers', () => {
    const north = geo({ 'geo-within-radius': { lat: 89.9, lon: 0, radius_km: 50 } });
    expect(north.matches(at(90, 123))).toBe(true);
    expect(north.matches(at(89.9, 180))).toBe(true);
    expect(north.matches(at(89.9, -90))).toBe(true);
    expect(north.matches(at(89, 180))).toBe(false);
    const south = geo({ 'geo-within-radius': { lat: -90, lon: 0, radius_km: 100 } });
    expect(south.matches(at(-89.2, -170))).toBe(true);
    expect(south.matches(at(-89, -170))).toBe(false);
  });

  it('cover the whole globe with a radius of half the circumference', () => {
    const f = geo({ 'geo-within-radius': { lat: 0, lon: 0, radius_km: 20016 } });
    expect(f.matches(at(0, 180))).toBe(true);
    expect(f.matches(at(-90, 0))).toBe(true);
    expect(f.matches(at(Number.NaN, 0))).toBe(false);
  });

  it('never leave a point within the radius outside its bounding boxes', () => {
    fc.assert(
      fc.property(
        fc.double({ min: -90, max: 90, noNaN: true }),
        fc.double({ min: -180, max: 180, noNaN: true }),
        fc.double({ min: 0.001, max: 3000, noNaN: true }),
        fc.double({ min: 0, max: 360, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (lat, lon, r, bearing, frac) => {
          const [pLat, pLon] = destination(lat, lon, bearing, r * frac);
          if (referenceHaversineKm(lat, lon, pLat, pLon) > r) return;
          const inBox = radiusBoxes(lat, lon, r).some(
            (b) => pLat >= b.minLat && pLat <= b.maxLat && pLon >= b.minLon && pLon <= b.maxLon,
          );
          expect(inBox).toBe(true);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('split a box that crosses the antimeridian in two', () => {
    const boxes = radiusBoxes(0, 179.9, 50);
    expect(boxes).toHaveLength(2);
    expect(boxes[0]!.maxLon).toBe(180);
    expect(boxes[1]!.minLon).toBe(-180);
    expect(radiusBoxes(0, 0, 50)).toHaveLength(1);
  });
});

describe('bounding-box filters', () => {
  it('include every edge and corner', () => {
    const f = geo({ 'geo-bbox': { min_lat: 10, max_lat: 20, min_lon: 30, max_lon: 40 } });
    for (const [lat, lon] of [
      [10, 35],
      [20, 35],
      [15, 30],
      [15, 40],
      [10, 30],
      [20, 40],
    ] as const) {
      expect(f.matches(at(lat, lon))).toBe(true);
    }
    expect(f.matches(at(9.999999, 35))).toBe(false);
    expect(f.matches(at(15, 40.000001))).toBe(false);
  });
});

describe('polygon filters', () => {
  // A triangle that is not symmetric in lat/lon: swapping the order would change the answers.
  const triangle = [
    [0, 0],
    [10, 0],
    [0, 20],
  ];

  it('read points as [lat, lon]', () => {
    const f = geo({ 'geo-polygon': { points: triangle } });
    expect(f.matches(at(2, 10))).toBe(true);
    expect(f.matches(at(10, 2))).toBe(false);
  });

  it('include points on edges and vertices', () => {
    const f = geo({ 'geo-polygon': { points: triangle } });
    expect(f.matches(at(0, 10))).toBe(true);
    expect(f.matches(at(5, 0))).toBe(true);
    expect(f.matches(at(10, 0))).toBe(true);
    expect(f.matches(at(5, 10))).toBe(true);
    expect(f.matches(at(5.01, 10))).toBe(false);
  });

  it('give the same answers with a repeated closing point', () => {
    const open = geo({ 'geo-polygon': { points: triangle } });
    const closed = geo({ 'geo-polygon': { points: [...triangle, [0, 0]] } });
    for (const [lat, lon] of [
      [2, 10],
      [10, 2],
      [0, 0],
      [-1, -1],
      [5, 10],
    ] as const) {
      expect(closed.matches(at(lat, lon))).toBe(open.matches(at(lat, lon)));
    }
  });

  it('handle concave polygons', () => {
    // A "C" shape opening to the east.
    const c = geo({
      'geo-polygon': {
        points: [
          [0, 0],
          [0, 10],
          [2, 10],
          [2, 2],
          [8, 2],
          [8, 10],
          [10, 10],
          [10, 0],
        ],
      },
    });
    expect(c.matches(at(5, 1))).toBe(true);
    expect(c.matches(at(5, 6))).toBe(false);
    expect(c.matches(at(1, 6))).toBe(true);
  });

  it('refuses geo coordinate headers no filter could match', () => {
    const publish = (headers: Record<string, unknown>) => () => checkGeoHeaders(headers);
    expect(publish({ 'x-geo-lat': 200 })).toThrow(
      new PreconditionFailedError(
        "invalid header 'x-geo-lat': must be a number of degrees in -90..90, got 200",
      ),
    );
    expect(publish({ 'x-geo-lat': 'north' })).toThrow(
      "invalid header 'x-geo-lat': must be a number of degrees in -90..90, got 'north'",
    );
    expect(publish({ 'x-geo-lon': -180.5 })).toThrow(
      "invalid header 'x-geo-lon': must be a number of degrees in -180..180, got -180.5",
    );
    expect(publish({ 'x-geo-lon': Number.NaN })).toThrow(PreconditionFailedError);
    expect(publish({ 'x-geo-lat': 90, 'x-geo-lon': -180 })).not.toThrow();
    expect(publish({ 'x-geo-lat': 45n, 'x-geo-lon': null })).not.toThrow();
    expect(() => checkGeoHeaders(undefined)).not.toThrow();
  });
});
