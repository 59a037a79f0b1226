/**
 * Consumer arguments to a validated filter spec. Runs once per subscribe; every invalid argument
 * is a 406 `PreconditionFailedError` naming the key, and parsing has no side effects.
 */
import { PreconditionFailedError } from '../errors.js';
import { isPlainTable } from '../table.js';
import { renderScalar, splitList } from './filter-values.js';
import {
  FILTER_ARG,
  type FilterNode,
  type GeoFilter,
  MATCH_TYPE_ARG,
  MATCH_UNFILTERED_ARG,
  type MatchType,
  type StreamFilterSpec,
} from './types.js';

type Table = Readonly<Record<string, unknown>>;

// Guards against self-referencing argument arrays.
const MAX_DEPTH = 32;
/** Most vertices of a `geo-polygon`: a message is tested against every edge. */
export const MAX_POLYGON_POINTS = 10_000;
/** Most filters (values, header pairs, shapes) one consumer may hold. */
export const MAX_FILTERS = 10_000;

function fail(detail: string): never {
  throw new PreconditionFailedError(detail);
}

function parseMatchType(value: unknown): MatchType {
  if (value === undefined || value === null) return 'all';
  const type = typeof value === 'string' ? value.toLowerCase() : undefined;
  if (type !== 'all' && type !== 'any') fail(`${MATCH_TYPE_ARG} must be 'any' or 'all'`);
  return type;
}

function parseMatchUnfiltered(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') fail(`${MATCH_UNFILTERED_ARG} must be a boolean`);
  return value;
}

function numberField(table: Table, key: string, field: string): number {
  const value = table[field];
  if (value === undefined || value === null) fail(`${key}: ${field} is required`);
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) fail(`${key}: ${field} must be a number`);
  return n;
}

function checkRange(key: string, what: string, value: number, limit: number): number {
  if (!(value >= -limit && value <= limit)) {
    fail(`${key}: ${what} must be between -${limit} and ${limit}`);
  }
  return value;
}

function latField(table: Table, key: string, field: string): number {
  return checkRange(key, field, numberField(table, key, field), 90);
}

function lonField(table: Table, key: string, field: string): number {
  return checkRange(key, field, numberField(table, key, field), 180);
}

function geoTable(key: string, value: unknown): Table {
  if (!isPlainTable(value)) fail(`${key} must be a table`);
  return value;
}

function parseRadius(value: unknown): GeoFilter {
  const key = 'geo-within-radius';
  const t = geoTable(key, value);
  const lat = latField(t, key, 'lat');
  const lon = lonField(t, key, 'lon');
  const radiusKm = numberField(t, key, 'radius_km');
  if (!(radiusKm > 0)) fail(`${key}: radius_km must be greater than 0`);
  return { kind: 'radius', lat, lon, radiusKm };
}

function parseBbox(value: unknown): GeoFilter {
  const key = 'geo-bbox';
  const t = geoTable(key, value);
  const minLat = latField(t, key, 'min_lat');
  const maxLat = latField(t, key, 'max_lat');
  const minLon = lonField(t, key, 'min_lon');
  const maxLon = lonField(t, key, 'max_lon');
  if (minLat > maxLat) fail(`${key}: min_lat must not be greater than max_lat`);
  if (minLon > maxLon) {
    fail(`${key}: min_lon must not be greater than max_lon (boxes do not wrap the antimeridian)`);
  }
  return { kind: 'bbox', minLat, maxLat, minLon, maxLon };
}

function parsePolygon(value: unknown): GeoFilter {
  const key = 'geo-polygon';
  const raw = geoTable(key, value).points;
  if (!Array.isArray(raw)) fail(`${key}: points must be an array of [lat, lon] pairs`);
  if (raw.length > MAX_POLYGON_POINTS + 1) {
    fail(`${key}: points must hold at most ${MAX_POLYGON_POINTS} points, got ${raw.length}`);
  }
  const points = raw.map((p: unknown, i): readonly [number, number] => {
    const lat: unknown = Array.isArray(p) ? p[0] : undefined;
    const lon: unknown = Array.isArray(p) ? p[1] : undefined;
    if (
      !Array.isArray(p) ||
      p.length !== 2 ||
      typeof lat !== 'number' ||
      typeof lon !== 'number' ||
      !Number.isFinite(lat) ||
      !Number.isFinite(lon)
    ) {
      fail(`${key}: points[${i}] must be a [lat, lon] pair of numbers`);
    }
    return [
      checkRange(key, `points[${i}] latitude`, lat, 90),
      checkRange(key, `points[${i}] longitude`, lon, 180),
    ];
  });
  // The ring closes implicitly; a repeated closing point adds nothing.
  const first = points[0];
  const last = points[points.length - 1];
  if (points.length > 1 && first && last && first[0] === last[0] && first[1] === last[1]) {
    points.pop();
  }
  if (points.length < 3) fail(`${key}: points must hold at least 3 points`);
  return { kind: 'polygon', points };
}

function add(out: FilterNode[], node: FilterNode): void {
  if (out.length >= MAX_FILTERS) fail(`${FILTER_ARG} must hold at most ${MAX_FILTERS} filters`);
  out.push(node);
}

function parseTableEntry(key: string, value: unknown, out: FilterNode[], depth: number): void {
  switch (key) {
    case FILTER_ARG:
      collect(value, out, depth + 1);
      return;
    case 'geo-within-radius':
      add(out, parseRadius(value));
      return;
    case 'geo-bbox':
      add(out, parseBbox(value));
      return;
    case 'geo-polygon':
      add(out, parsePolygon(value));
      return;
    default: {
      const rendered = renderScalar(value);
      if (rendered === undefined) {
        fail(`${FILTER_ARG}: the value of '${key}' must be a string, number, bigint or boolean`);
      }
      add(out, { kind: 'header', key, value: rendered });
    }
  }
}

function collect(value: unknown, out: FilterNode[], depth: number): void {
  // Nothing, inside a list; alone it is an empty filter (the caller's business).
  if (value === undefined || value === null) return;
  if (depth > MAX_DEPTH) fail(`${FILTER_ARG} is nested too deeply`);
  if (typeof value === 'string') {
    for (const piece of splitList(value)) add(out, { kind: 'value', value: piece });
  } else if (Array.isArray(value)) {
    for (const item of value) collect(item, out, depth + 1);
  } else if (isPlainTable(value)) {
    for (const key of Object.keys(value)) parseTableEntry(key, value[key], out, depth);
  } else {
    fail(`${FILTER_ARG} must be a string, table, or array`);
  }
}

/**
 * Parses a consumer's filter arguments (`x-stream-filter`, `x-filter-match-type`,
 * `x-stream-match-unfiltered`). Returns `undefined` when there is no `x-stream-filter`, or one
 * that filters nothing (`''`, `[]`, `{}`, `null`): such a consumer receives every message, as on
 * LavinMQ. With `strict`, a filter that filters nothing is refused, being most likely a mistake.
 *
 * @throws PreconditionFailedError (406) naming the invalid key.
 */
export function parseFilterArgs(
  args: Readonly<Record<string, unknown>> | undefined,
  strict = false,
): StreamFilterSpec | undefined {
  if (args === undefined) return undefined;
  const matchType = parseMatchType(args[MATCH_TYPE_ARG]);
  const matchUnfiltered = parseMatchUnfiltered(args[MATCH_UNFILTERED_ARG]);
  const filter = args[FILTER_ARG];
  if (filter === undefined) return undefined;
  const filters: FilterNode[] = [];
  collect(filter, filters, 0);
  if (filters.length === 0) {
    if (strict) fail(`${FILTER_ARG} must hold at least one filter`);
    return undefined;
  }
  return { filters, matchType, matchUnfiltered };
}
