/**
 * Stream filter throughput: compiled predicate evaluations per second for each filter kind, and
 * the consumer geo index against asking every consumer (10,000 circles of 1-50 km over Europe).
 *
 * Standalone: `node --expose-gc --import tsx bench/filters.ts`.
 */
import { type CompiledStreamFilter, GeoIndex, parseStreamFilter } from '../src/filters/index.js';
import { bestOf, isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

/** Deterministic PRNG (mulberry32) so runs compare. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function compile(f: unknown): CompiledStreamFilter {
  return parseStreamFilter({ 'x-stream-filter': f })!;
}

const N = scaled(2_000_000);
const MASK = 1023;

const ROUNDS = 5;

async function evaluations(
  name: string,
  filter: CompiledStreamFilter,
  messages: Record<string, unknown>[],
  target?: string,
): Promise<BenchResult> {
  let hits = 0;
  const opsPerSec = await bestOf(
    N,
    () => {
      for (let i = 0; i < N; i++) if (filter.matches(messages[i & MASK]!)) hits++;
    },
    { rounds: ROUNDS },
  );
  const share = hits / (ROUNDS * N);
  const note = `${(share * 100).toFixed(0)}% match`;
  return { name, opsPerSec, note, ...(target === undefined ? {} : { targets: [{ target }] }) };
}

async function predicateBenches(): Promise<BenchResult[]> {
  const r = rng(1);
  const values = Array.from({ length: 16 }, (_, i) => `sensor-${i}`);
  const tagged = Array.from({ length: MASK + 1 }, () => ({
    'x-stream-filter-value': values[Math.floor(r() * values.length)],
  }));
  const lists = Array.from({ length: MASK + 1 }, () => ({
    'x-stream-filter-value': `${values[Math.floor(r() * 16)]},${values[Math.floor(r() * 16)]},x`,
  }));
  const regions = ['eu', 'us', 'ap', 'sa', 'af', 'me', 'oc', 'an'];
  const keyed = Array.from({ length: MASK + 1 }, () => ({
    region: regions[Math.floor(r() * regions.length)],
  }));
  const [lat0, lon0] = [48.8566, 2.3522];
  const near = Array.from({ length: MASK + 1 }, () => ({
    'x-geo-lat': lat0 - 1 + 2 * r(),
    'x-geo-lon': lon0 - 1 + 2 * r(),
  }));
  const ring = Array.from({ length: 20 }, (_, i) => {
    const a = (i / 20) * 2 * Math.PI;
    const radius = i % 2 === 0 ? 1 : 0.6; // a star: concave, so every edge counts
    return [lat0 + radius * Math.sin(a), lon0 + radius * Math.cos(a)];
  });
  return [
    await evaluations('filter: string value', compile('sensor-3'), tagged, '≥ 20 M/s'),
    await evaluations('filter: string value, 3-value lists', compile('sensor-3'), lists),
    await evaluations('filter: key-value', compile({ region: 'eu' }), keyed, '≥ 10 M/s'),
    await evaluations(
      'filter: geo radius 50 km',
      compile({ 'geo-within-radius': { lat: lat0, lon: lon0, radius_km: 50 } }),
      near,
      '≥ 10 M/s',
    ),
    await evaluations(
      'filter: geo polygon 20 vertices',
      compile({ 'geo-polygon': { points: ring } }),
      near,
      '≥ 2 M/s',
    ),
  ];
}

async function geoIndexBenches(): Promise<BenchResult[]> {
  const r = rng(2);
  const CONSUMERS = 10_000;
  const POINTS = scaled(20_000);
  const europe = () => [36 + 34 * r(), -10 + 50 * r()] as const;
  const filters = Array.from({ length: CONSUMERS }, () => {
    const [lat, lon] = europe();
    return compile({ 'geo-within-radius': { lat, lon, radius_km: 1 + 49 * r() } });
  });
  const index = new GeoIndex<number>();
  for (const [i, f] of filters.entries()) index.insert(i, f);
  const points = Array.from({ length: POINTS }, () => {
    const [lat, lon] = europe();
    return { 'x-geo-lat': lat, 'x-geo-lon': lon };
  });

  let indexed = 0;
  const visit = () => {
    indexed++;
  };
  const indexedRate = await bestOf(
    POINTS,
    () => {
      for (const p of points) index.forEachMatch(p, visit);
    },
    { rounds: ROUNDS },
  );

  // The naive loop: every consumer, each behind a bounding-box pre-check of its region.
  const boxes = filters.map((f) => f.geoRegion!);
  let naive = 0;
  const naivePoints = Math.min(1000, POINTS);
  const naiveRate = await bestOf(
    naivePoints,
    () => {
      for (let p = 0; p < naivePoints; p++) {
        const h = points[p]!;
        const lat = h['x-geo-lat'];
        const lon = h['x-geo-lon'];
        for (let i = 0; i < CONSUMERS; i++) {
          const region = boxes[i]!;
          for (let b = 0; b < region.length; b++) {
            const box = region[b]!;
            if (lat >= box.minLat && lat <= box.maxLat && lon >= box.minLon && lon <= box.maxLon) {
              if (filters[i]!.matches(h)) naive++;
              break;
            }
          }
        }
      }
    },
    { rounds: 3 },
  );
  if (indexed === 0 || naive === 0) throw new Error('geo benchmark matched nothing');
  const perPoint = indexed / (ROUNDS * POINTS);
  return [
    {
      name: 'geo index: 10k consumers, matches per point',
      opsPerSec: indexedRate,
      note: `${(indexedRate / naiveRate).toFixed(0)}x the naive loop; ${perPoint.toFixed(2)} matches/point`,
    },
    { name: 'geo naive loop: 10k consumers, bbox pre-check', opsPerSec: naiveRate },
  ];
}

/** Runs the filter benchmarks. */
export async function run(): Promise<BenchResult[]> {
  return [...(await predicateBenches()), ...(await geoIndexBenches())];
}

if (isMain(import.meta.url)) printResults(await run());
