/**
 * Filter spec to one predicate. Compiling happens once per consumer; the predicate then reads a
 * few headers per message: filter values first (a verdict cached per header string), then
 * key-value comparisons, then geo tests, cheapest shape first, each behind its box.
 */
import { filterValues, renderScalar } from './filter-values.js';
import {
  boxArea,
  geoFilterBoxes,
  geoPointTest,
  headerLat,
  headerLon,
  type PointTest,
} from './geo.js';
import { parseFilterArgs } from './parse.js';
import {
  FILTER_VALUE_HEADER,
  type FilterNode,
  type GeoBox,
  type GeoFilter,
  type Headers,
  type MatchType,
  type StreamFilterSpec,
} from './types.js';

/** A consumer's filter, ready for the delivery path. */
export interface CompiledStreamFilter {
  /** The parsed configuration it was compiled from. */
  readonly spec: StreamFilterSpec;
  readonly matchType: MatchType;
  readonly matchUnfiltered: boolean;
  /**
   * Whether a message with these headers is delivered to the consumer. A bound function: pass it
   * around freely. `undefined` headers are a message without headers.
   */
  readonly matches: (headers: Headers | undefined) => boolean;
  /**
   * When defined, every message the filter matches lies inside one of these boxes, so the consumer
   * can live in a `GeoIndex` instead of being asked about every message. Defined only when a match
   * always needs a geo filter to pass: match type `'all'` with at least one geo filter (the
   * tightest is kept), or `'any'` with geo filters only (their union); never with match-unfiltered.
   */
  readonly geoRegion: readonly GeoBox[] | undefined;
  /**
   * When defined, every message the filter matches carries at least one of these filter values,
   * so the consumer can be found through them instead of being asked about every message.
   * Defined for match type `'all'` with a value filter (one of its values is enough), or `'any'`
   * with value filters only (all of them); never with match-unfiltered.
   */
  readonly requiredValues: readonly string[] | undefined;
  /** Per entry of `spec.filters`: the boxes bounding a geo filter, `undefined` for the others. */
  readonly nodeBoxes: readonly (readonly GeoBox[] | undefined)[];
  /**
   * When defined, `matches` is exactly this geo filter's test of the message point (the filter is
   * one geo filter, without match-unfiltered): an index may test the geometry itself.
   */
  readonly exactGeo: GeoFilter | undefined;
  /**
   * When defined, a message can match only if `passesValueGate` lets its filter-value key (see
   * `filterValueKey`) through: the filter values alone rule the others out, so a replay may pass
   * over messages by their key without reading their headers. Defined for match type `'all'`
   * with a value filter, or `'any'` with value filters only.
   */
  readonly valueGate: ValueGate | undefined;
}

/** What a filter needs of a message's filter values; see `CompiledStreamFilter.valueGate`. */
export interface ValueGate {
  /** The distinct values of the filter's value filters. */
  readonly values: readonly string[];
  /** Every value is needed (match type `'all'`), else one. */
  readonly all: boolean;
  /** Whether a message without filter values gets through (match-unfiltered). */
  readonly unfiltered: boolean;
  /** The filter has value filters only: what the gate lets through, it matches. */
  readonly exact: boolean;
}

/**
 * Whether a message with this filter-value key may match a filter with this gate; `false` is
 * a guarantee that it does not.
 */
export function passesValueGate(gate: ValueGate, key: string | undefined): boolean {
  return key === undefined ? gate.unfiltered : holds(filterValues(key), gate.values, gate.all);
}

const GEO_COST: Record<GeoFilter['kind'], number> = { bbox: 0, radius: 1, polygon: 2 };
// Never equal to a header value: disables the single-value shortcut.
const NO_SHORTCUT = Symbol('none');

function isGeo(node: FilterNode): node is GeoFilter {
  return node.kind === 'radius' || node.kind === 'bbox' || node.kind === 'polygon';
}

function regionOf(spec: StreamFilterSpec, nodeBoxes: CompiledStreamFilter['nodeBoxes']) {
  if (spec.matchUnfiltered) return undefined;
  if (spec.matchType === 'all' || spec.filters.length === 1) {
    let best: readonly GeoBox[] | undefined;
    let bestArea = Number.POSITIVE_INFINITY;
    for (const boxes of nodeBoxes) {
      if (!boxes) continue;
      const area = boxes.reduce((sum, b) => sum + boxArea(b), 0);
      if (area < bestArea) [best, bestArea] = [boxes, area];
    }
    return best;
  }
  const union: GeoBox[] = [];
  for (const boxes of nodeBoxes) {
    if (!boxes) return undefined;
    union.push(...boxes);
  }
  return union;
}

function requiredValuesOf(spec: StreamFilterSpec): readonly string[] | undefined {
  if (spec.matchUnfiltered) return undefined;
  const values = spec.filters.flatMap((f) => (f.kind === 'value' ? [f.value] : []));
  if (values.length === 0) return undefined;
  if (spec.matchType === 'all' || spec.filters.length === 1) return [values[0]!];
  return values.length === spec.filters.length ? [...new Set(values)] : undefined;
}

// Distinct header strings a predicate remembers its verdict for: publishers use few lists, and a
// bound keeps a consumer's memory small whatever they send.
const VERDICT_CACHE = 256;

/** Whether filter values hold all (or, without `all`, any) of `values`. */
function holds(tagged: readonly string[], values: readonly string[], all: boolean): boolean {
  for (let i = 0; i < values.length; i++) {
    if (tagged.includes(values[i]!) !== all) return !all;
  }
  return all;
}

/** The distinct values of a spec's value filters. */
function valuesOf(spec: StreamFilterSpec): string[] {
  return [...new Set(spec.filters.flatMap((f) => (f.kind === 'value' ? [f.value] : [])))];
}

function valueGateOf(spec: StreamFilterSpec): ValueGate | undefined {
  const values = valuesOf(spec);
  const all = spec.matchType === 'all';
  const exact = spec.filters.every((f) => f.kind === 'value');
  // With 'any', a key-value or geo filter may match whatever the filter values say.
  if (values.length === 0 || (!all && !exact)) return undefined;
  return Object.freeze({ values, all, unfiltered: spec.matchUnfiltered, exact });
}

function buildPredicate(spec: StreamFilterSpec): (headers: Headers | undefined) => boolean {
  const values = valuesOf(spec);
  const headerFilters = spec.filters.flatMap((f) => (f.kind === 'header' ? [f] : []));
  const keys = headerFilters.map((f) => f.key);
  const expected = headerFilters.map((f) => f.value);
  const tests: PointTest[] = spec.filters
    .filter(isGeo)
    .sort((a, b) => GEO_COST[a.kind] - GEO_COST[b.kind])
    .map(geoPointTest);
  const nValues = values.length;
  const nKeys = keys.length;
  const nTests = tests.length;
  const unfiltered = spec.matchUnfiltered;
  const all = spec.matchType === 'all';
  const single: unknown = nValues === 1 ? values[0] : NO_SHORTCUT;
  // A verdict per header string: the common case is one map lookup, no split, no scan.
  const verdicts = new Map<string, boolean>();
  const valuesPass = (raw: unknown): boolean => {
    if (raw === single) return true;
    if (typeof raw !== 'string') return holds(filterValues(raw), values, all);
    let verdict = verdicts.get(raw);
    if (verdict === undefined) {
      verdict = holds(filterValues(raw), values, all);
      if (verdicts.size >= VERDICT_CACHE) verdicts.clear();
      verdicts.set(raw, verdict);
    }
    return verdict;
  };

  if (all) {
    return (h) => {
      if (h === undefined || h === null) return unfiltered;
      const raw = h[FILTER_VALUE_HEADER];
      if (raw === undefined || raw === null) {
        if (unfiltered) return true;
        if (nValues !== 0) return false;
      } else if (nValues !== 0 && !valuesPass(raw)) return false;
      for (let i = 0; i < nKeys; i++) if (renderScalar(h[keys[i]!]) !== expected[i]) return false;
      if (nTests !== 0) {
        const lat = headerLat(h);
        const lon = headerLon(h);
        for (let i = 0; i < nTests; i++) if (!tests[i]!(lat, lon)) return false;
      }
      return true;
    };
  }
  return (h) => {
    if (h === undefined || h === null) return unfiltered;
    const raw = h[FILTER_VALUE_HEADER];
    if (raw === undefined || raw === null) {
      if (unfiltered) return true;
    } else if (nValues !== 0 && valuesPass(raw)) return true;
    for (let i = 0; i < nKeys; i++) if (renderScalar(h[keys[i]!]) === expected[i]) return true;
    if (nTests !== 0) {
      const lat = headerLat(h);
      const lon = headerLon(h);
      for (let i = 0; i < nTests; i++) if (tests[i]!(lat, lon)) return true;
    }
    return false;
  };
}

/** Compiles a parsed filter spec into a `CompiledStreamFilter`. */
export function compileFilter(spec: StreamFilterSpec): CompiledStreamFilter {
  const nodeBoxes = spec.filters.map((f) =>
    isGeo(f) ? Object.freeze(geoFilterBoxes(f)) : undefined,
  );
  const geoRegion = regionOf(spec, nodeBoxes);
  const only = spec.filters.length === 1 ? spec.filters[0]! : undefined;
  return Object.freeze({
    spec,
    matchType: spec.matchType,
    matchUnfiltered: spec.matchUnfiltered,
    matches: buildPredicate(spec),
    geoRegion: geoRegion && Object.freeze(geoRegion),
    requiredValues: requiredValuesOf(spec),
    nodeBoxes: Object.freeze(nodeBoxes),
    exactGeo: only && isGeo(only) && !spec.matchUnfiltered ? only : undefined,
    valueGate: valueGateOf(spec),
  });
}

/**
 * Parses and compiles a consumer's subscribe arguments in one step: the call the stream's
 * consumer path makes. `undefined` means no filter: deliver everything. `strict` refuses a filter
 * that holds none (see {@link parseFilterArgs}).
 *
 * @throws PreconditionFailedError (406) naming the invalid key.
 */
export function parseStreamFilter(
  args: Readonly<Record<string, unknown>> | undefined,
  strict = false,
): CompiledStreamFilter | undefined {
  const spec = parseFilterArgs(args, strict);
  return spec && compileFilter(spec);
}
