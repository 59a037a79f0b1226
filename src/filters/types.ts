/**
 * The filter model: what a stream consumer's filter arguments mean once parsed. The parser turns
 * `x-stream-filter` and its companion arguments into a `StreamFilterSpec`; the compiler turns that
 * into one predicate. Nothing here knows about queues or storage: filters see plain header tables.
 */

/** A message's header table as filters read it. */
export type Headers = Readonly<Record<string, unknown>>;

/** Publish-side header tagging a message with one value or a comma-separated list of values. */
export const FILTER_VALUE_HEADER = 'x-stream-filter-value';
/** Publish-side header carrying the message's latitude in degrees. */
export const GEO_LAT_HEADER = 'x-geo-lat';
/** Publish-side header carrying the message's longitude in degrees. */
export const GEO_LON_HEADER = 'x-geo-lon';

/** Consumer argument holding the filters. */
export const FILTER_ARG = 'x-stream-filter';
/** Consumer argument choosing how filters combine. */
export const MATCH_TYPE_ARG = 'x-filter-match-type';
/** Consumer argument delivering messages that carry no filter value. */
export const MATCH_UNFILTERED_ARG = 'x-stream-match-unfiltered';

/** `'all'`: every filter must match; `'any'`: at least one. */
export type MatchType = 'all' | 'any';

/** Matches a message whose `x-stream-filter-value` list contains `value`. */
export interface ValueFilter {
  readonly kind: 'value';
  readonly value: string;
}

/** Matches a message whose header `key`, rendered as a string, equals `value`. */
export interface HeaderFilter {
  readonly kind: 'header';
  readonly key: string;
  readonly value: string;
}

/** Matches a message within `radiusKm` (inclusive, great-circle distance) of a point. */
export interface RadiusFilter {
  readonly kind: 'radius';
  readonly lat: number;
  readonly lon: number;
  readonly radiusKm: number;
}

/** Matches a message inside a latitude/longitude box, edges included. */
export interface BboxFilter {
  readonly kind: 'bbox';
  readonly minLat: number;
  readonly maxLat: number;
  readonly minLon: number;
  readonly maxLon: number;
}

/**
 * Matches a message inside (or on the edge of) a polygon of `[lat, lon]` vertices, stored without
 * a closing point. Edges are straight in latitude/longitude and never wrap the antimeridian.
 */
export interface PolygonFilter {
  readonly kind: 'polygon';
  readonly points: readonly (readonly [lat: number, lon: number])[];
}

/** A filter on the message's coordinates. */
export type GeoFilter = RadiusFilter | BboxFilter | PolygonFilter;

/** One parsed filter. */
export type FilterNode = ValueFilter | HeaderFilter | GeoFilter;

/** A consumer's validated filter configuration. `filters` is never empty. */
export interface StreamFilterSpec {
  readonly filters: readonly FilterNode[];
  readonly matchType: MatchType;
  /** Deliver messages without an `x-stream-filter-value` header whatever the filters say. */
  readonly matchUnfiltered: boolean;
}

/** A latitude/longitude rectangle in degrees, edges included; never wraps the antimeridian. */
export interface GeoBox {
  readonly minLat: number;
  readonly maxLat: number;
  readonly minLon: number;
  readonly maxLon: number;
}
