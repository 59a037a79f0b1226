/**
 * Geometry for geo filters on a spherical Earth: haversine distance, the bounding boxes that
 * pre-check every geo test (and feed the consumer index and segment summaries), polygon tests,
 * and reading a message's coordinates from its headers.
 */
import booleanPointInPolygon from '@turf/boolean-point-in-polygon';
import type { Polygon } from 'geojson';
import { PreconditionFailedError } from '../errors.js';
import {
  type BboxFilter,
  GEO_LAT_HEADER,
  GEO_LON_HEADER,
  type GeoBox,
  type GeoFilter,
  type Headers,
  type PolygonFilter,
  type RadiusFilter,
} from './types.js';

/** Mean Earth radius used for every distance, in km. */
export const EARTH_RADIUS_KM = 6371.0;

const RAD = Math.PI / 180;
// Widens computed boxes so floating-point rounding can never push a matching point outside its
// pre-check box (about 0.1 mm).
const PAD_DEG = 1e-9;

/** The whole globe as a box. */
export const WORLD_BOX: GeoBox = Object.freeze({
  minLat: -90,
  maxLat: 90,
  minLon: -180,
  maxLon: 180,
});

/** The haversine term `a` of two points, given the cosine of the first latitude. */
function haversineTerm(lat1: number, lon1: number, cosLat1: number, lat2: number, lon2: number) {
  const sLat = Math.sin((lat2 - lat1) * RAD * 0.5);
  const sLon = Math.sin((lon2 - lon1) * RAD * 0.5);
  return sLat * sLat + cosLat1 * Math.cos(lat2 * RAD) * sLon * sLon;
}

/** The distance in km of a haversine term. */
export function termToKm(a: number): number {
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** Great-circle distance in km between two points in degrees (haversine, R = 6371.0 km). */
export function haversineKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  return termToKm(haversineTerm(lat1, lon1, Math.cos(lat1 * RAD), lat2, lon2));
}

/**
 * A header coordinate: a finite number (or bigint) within `[-limit, limit]`, else `NaN`, which
 * fails every comparison and so matches no geo filter.
 */
export function toCoordinate(value: unknown, limit: number): number {
  const n =
    typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : Number.NaN;
  return n >= -limit && n <= limit ? n : Number.NaN;
}

/**
 * Refuses geo coordinate headers no filter could ever match: a publish in strict mode checks
 * them, as filters read `x-geo-lat` / `x-geo-lon` as numbers of degrees (a `bigint` too); by
 * default such a message is stored and matches no geo filter, as on LavinMQ.
 * @throws PreconditionFailedError (406) naming the header.
 */
export function checkGeoHeaders(headers: Headers | undefined): void {
  if (headers === undefined) return;
  checkCoordinate(headers, GEO_LAT_HEADER, 90);
  checkCoordinate(headers, GEO_LON_HEADER, 180);
}

function checkCoordinate(headers: Headers, header: string, limit: number): void {
  const value = headers[header];
  if (value === undefined || value === null || !Number.isNaN(toCoordinate(value, limit))) return;
  const got = typeof value === 'string' ? `'${value.slice(0, 40)}'` : String(value);
  throw new PreconditionFailedError(
    `invalid header '${header}': must be a number of degrees in -${limit}..${limit}, got ${got}`,
  );
}

/** The message latitude from `x-geo-lat`, or `NaN` when missing or invalid. */
export function headerLat(headers: Headers): number {
  return toCoordinate(headers[GEO_LAT_HEADER], 90);
}

/** The message longitude from `x-geo-lon`, or `NaN` when missing or invalid. */
export function headerLon(headers: Headers): number {
  return toCoordinate(headers[GEO_LON_HEADER], 180);
}

/** Whether a box contains a point, edges included. */
export function boxContains(box: GeoBox, lat: number, lon: number): boolean {
  return lat >= box.minLat && lat <= box.maxLat && lon >= box.minLon && lon <= box.maxLon;
}

/** Whether two boxes share at least one point. */
export function boxesIntersect(a: GeoBox, b: GeoBox): boolean {
  return (
    a.minLat <= b.maxLat && b.minLat <= a.maxLat && a.minLon <= b.maxLon && b.minLon <= a.maxLon
  );
}

/** Area of a box in square degrees: a cheap size measure to pick the tightest region. */
export function boxArea(box: GeoBox): number {
  return (box.maxLat - box.minLat) * (box.maxLon - box.minLon);
}

/**
 * Boxes covering every point within `radiusKm` of a centre: one box, or two when the circle
 * crosses the antimeridian; a circle holding a pole spans every longitude.
 */
export function radiusBoxes(lat: number, lon: number, radiusKm: number): GeoBox[] {
  const d = radiusKm / EARTH_RADIUS_KM; // angular radius, radians
  const dDeg = d / RAD;
  const minLat = Math.max(-90, lat - dDeg - PAD_DEG);
  const maxLat = Math.min(90, lat + dDeg + PAD_DEG);
  // The circle reaches a pole, or is so close that asin below loses precision: all longitudes.
  const ratio = Math.sin(d) / Math.cos(lat * RAD);
  if (maxLat >= 90 || minLat <= -90 || d >= Math.PI / 2 || ratio >= 1 - 1e-9) {
    return [{ minLat, maxLat, minLon: -180, maxLon: 180 }];
  }
  const dLon = Math.asin(ratio) / RAD + PAD_DEG;
  const west = lon - dLon;
  const east = lon + dLon;
  if (west < -180) {
    return [
      { minLat, maxLat, minLon: west + 360, maxLon: 180 },
      { minLat, maxLat, minLon: -180, maxLon: east },
    ];
  }
  if (east > 180) {
    return [
      { minLat, maxLat, minLon: west, maxLon: 180 },
      { minLat, maxLat, minLon: -180, maxLon: east - 360 },
    ];
  }
  return [{ minLat, maxLat, minLon: west, maxLon: east }];
}

/** The box of a polygon's vertices. */
export function polygonBox(points: PolygonFilter['points']): GeoBox {
  let minLat = 90;
  let maxLat = -90;
  let minLon = 180;
  let maxLon = -180;
  for (const [lat, lon] of points) {
    if (lat < minLat) minLat = lat;
    if (lat > maxLat) maxLat = lat;
    if (lon < minLon) minLon = lon;
    if (lon > maxLon) maxLon = lon;
  }
  return { minLat, maxLat, minLon, maxLon };
}

/** Boxes that together contain every point a geo filter matches. */
export function geoFilterBoxes(filter: GeoFilter): GeoBox[] {
  switch (filter.kind) {
    case 'radius':
      return radiusBoxes(filter.lat, filter.lon, filter.radiusKm);
    case 'bbox':
      return [
        {
          minLat: filter.minLat,
          maxLat: filter.maxLat,
          minLon: filter.minLon,
          maxLon: filter.maxLon,
        },
      ];
    case 'polygon':
      return [polygonBox(filter.points)];
  }
}

/** A point test: `(lat, lon) => boolean`, false for `NaN` coordinates. */
export type PointTest = (lat: number, lon: number) => boolean;

/** Precomputed constants of a radius test; see `withinRadius`. */
export interface RadiusCheck {
  readonly lat0: number;
  readonly lon0: number;
  readonly cosLat0: number;
  /** Haversine terms at or below this are surely inside... */
  readonly sure: number;
  /** ...and above this surely outside; in between the exact distance decides. */
  readonly out: number;
  readonly radiusKm: number;
}

/** The constants `withinRadius` needs for a radius filter. */
export function radiusCheck(f: RadiusFilter): RadiusCheck {
  const half = Math.min(Math.PI / 2, f.radiusKm / (2 * EARTH_RADIUS_KM));
  const s = Math.sin(half);
  // Comparing the haversine term against its threshold skips asin/sqrt; only points within a
  // hair of the circle take the exact distance, so results equal `haversineKm(...) <= radiusKm`.
  return {
    lat0: f.lat,
    lon0: f.lon,
    cosLat0: Math.cos(f.lat * RAD),
    sure: half >= Math.PI / 2 ? Number.POSITIVE_INFINITY : s * s * (1 - 1e-9),
    out: s * s * (1 + 1e-9),
    radiusKm: f.radiusKm,
  };
}

/** Whether a point lies within a radius check's circle (no box pre-check; false for `NaN`). */
export function withinRadius(c: RadiusCheck, lat: number, lon: number): boolean {
  const a = haversineTerm(c.lat0, c.lon0, c.cosLat0, lat, lon);
  if (a <= c.sure) return true;
  if (!(a <= c.out)) return false;
  return termToKm(a) <= c.radiusKm;
}

function radiusTest(f: RadiusFilter): PointTest {
  const check = radiusCheck(f);
  const [b1, b2] = radiusBoxes(f.lat, f.lon, f.radiusKm) as [GeoBox, GeoBox | undefined];
  const { minLat, maxLat } = b1;
  const w1 = b1.minLon;
  const e1 = b1.maxLon;
  const w2 = b2 ? b2.minLon : Number.POSITIVE_INFINITY;
  const e2 = b2 ? b2.maxLon : Number.NEGATIVE_INFINITY;
  return (lat, lon) =>
    lat >= minLat &&
    lat <= maxLat &&
    ((lon >= w1 && lon <= e1) || (lon >= w2 && lon <= e2)) &&
    withinRadius(check, lat, lon);
}

function bboxTest(f: BboxFilter): PointTest {
  const { minLat, maxLat, minLon, maxLon } = f;
  return (lat, lon) => lat >= minLat && lat <= maxLat && lon >= minLon && lon <= maxLon;
}

const PIP_OPTIONS = { ignoreBoundary: false };

function polygonTest(f: PolygonFilter): PointTest {
  const { minLat, maxLat, minLon, maxLon } = polygonBox(f.points);
  // GeoJSON orders [lon, lat] and wants the ring closed.
  const ring = f.points.map(([lat, lon]) => [lon, lat]);
  ring.push([f.points[0]![1], f.points[0]![0]]);
  const polygon: Polygon = { type: 'Polygon', coordinates: [ring] };
  return (lat, lon) =>
    lat >= minLat &&
    lat <= maxLat &&
    lon >= minLon &&
    lon <= maxLon &&
    booleanPointInPolygon([lon, lat], polygon, PIP_OPTIONS);
}

/** The exact point test of a geo filter, with its bounding-box pre-check built in. */
export function geoPointTest(filter: GeoFilter): PointTest {
  switch (filter.kind) {
    case 'radius':
      return radiusTest(filter);
    case 'bbox':
      return bboxTest(filter);
    case 'polygon':
      return polygonTest(filter);
  }
}
