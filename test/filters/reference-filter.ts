/**
 * A deliberately plain interpreter of the stream filter rules, written straight from their
 * description: it walks the consumer arguments for every message and evaluates each piece
 * directly, with no sets, boxes, caches or shortcuts. Valid arguments only. The differential
 * tests require the real parser and compiler to agree with it.
 */
import booleanPointInPolygon from '@turf/boolean-point-in-polygon';

type Table = Record<string, unknown>;
type Check = (headers: Table) => boolean;

export function referenceHaversineKm(lat1: number, lon1: number, lat2: number, lon2: number) {
  const rad = (deg: number) => (deg * Math.PI) / 180;
  const dLat = rad(lat2 - lat1);
  const dLon = rad(lon2 - lon1);
  const a =
    Math.sin(dLat / 2) ** 2 + Math.cos(rad(lat1)) * Math.cos(rad(lat2)) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371.0 * Math.asin(Math.sqrt(Math.min(1, a)));
}

function render(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return String(value);
  }
  return undefined;
}

function pieces(list: string): string[] {
  return list
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

function messagePoint(headers: Table): [number, number] | undefined {
  const read = (v: unknown) => (typeof v === 'bigint' ? Number(v) : v);
  const lat = read(headers['x-geo-lat']);
  const lon = read(headers['x-geo-lon']);
  if (typeof lat !== 'number' || typeof lon !== 'number') return undefined;
  if (!(lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180)) return undefined;
  return [lat, lon];
}

function geoCheck(inside: (lat: number, lon: number) => boolean): Check {
  return (headers) => {
    const p = messagePoint(headers);
    return p !== undefined && inside(p[0], p[1]);
  };
}

function checksOf(arg: unknown, out: Check[]): void {
  if (arg === undefined || arg === null) return;
  if (typeof arg === 'string') {
    for (const wanted of pieces(arg)) {
      out.push((headers) => {
        const tagged = render(headers['x-stream-filter-value']);
        return tagged !== undefined && pieces(tagged).includes(wanted);
      });
    }
    return;
  }
  if (Array.isArray(arg)) {
    for (const item of arg) checksOf(item, out);
    return;
  }
  for (const [key, value] of Object.entries(arg as Table)) {
    const v = value as Table;
    if (key === 'x-stream-filter') checksOf(value, out);
    else if (key === 'geo-within-radius') {
      const [lat, lon, r] = [Number(v.lat), Number(v.lon), Number(v.radius_km)];
      out.push(geoCheck((la, lo) => referenceHaversineKm(lat, lon, la, lo) <= r));
    } else if (key === 'geo-bbox') {
      const [a, b, c, d] = [v.min_lat, v.max_lat, v.min_lon, v.max_lon].map(Number) as number[];
      out.push(geoCheck((la, lo) => a! <= la && la <= b! && c! <= lo && lo <= d!));
    } else if (key === 'geo-polygon') {
      const points = v.points as [number, number][];
      const ring = [...points, points[0]!].map(([la, lo]) => [lo, la]);
      const polygon = { type: 'Polygon' as const, coordinates: [ring] };
      out.push(geoCheck((la, lo) => booleanPointInPolygon([lo, la], polygon)));
    } else {
      out.push((headers) => render(headers[key]) === render(value));
    }
  }
}

/** Whether a consumer with these (valid) arguments receives a message with these headers. */
export function referenceMatches(args: Table, headers: Table | undefined): boolean {
  const checks: Check[] = [];
  checksOf(args['x-stream-filter'], checks);
  if (checks.length === 0) return true;
  const h = headers ?? {};
  const unfilteredArg = args['x-stream-match-unfiltered'] === true;
  const tag = h['x-stream-filter-value'];
  if (unfilteredArg && (tag === undefined || tag === null)) return true;
  const any = String(args['x-filter-match-type'] ?? 'all').toLowerCase() === 'any';
  return any ? checks.some((c) => c(h)) : checks.every((c) => c(h));
}
