/**
 * Stream filters: consumer arguments to compiled predicates, consumer indexes (geo and by filter
 * value), segment summaries.
 */
export {
  type CompiledStreamFilter,
  compileFilter,
  parseStreamFilter,
  passesValueGate,
  type ValueGate,
} from './compile.js';
export { filterValueKey, filterValues, renderScalar } from './filter-values.js';
export {
  checkGeoHeaders,
  EARTH_RADIUS_KM,
  haversineKm,
  headerLat,
  headerLon,
  radiusBoxes,
} from './geo.js';
export { GeoIndex } from './geo-index.js';
export { parseFilterArgs } from './parse.js';
export {
  mayMatch,
  type SegmentSummary,
  SegmentSummaryBuilder,
  type SegmentSummaryOptions,
} from './segment-summary.js';
export * from './types.js';
export { ValueIndex } from './value-index.js';
