/**
 * Publish-side header reading shared by the compiled predicates and the segment summaries: the
 * string rendering of a header value and the list of values in `x-stream-filter-value`.
 */

/**
 * The string a header value is compared by: strings as they are, numbers and bigints in decimal,
 * booleans as `true`/`false`. Anything else (null, dates, bytes, arrays, tables) has no rendering
 * and never equals a filter.
 */
export function renderScalar(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
    default:
      return undefined;
  }
}

/** Splits a comma list into trimmed pieces, dropping empty ones. */
export function splitList(list: string): string[] {
  const out: string[] = [];
  for (const piece of list.split(',')) {
    const value = piece.trim();
    if (value !== '') out.push(value);
  }
  return out;
}

/**
 * What decides a message's filter values, as one string: `undefined` when it has no
 * `x-stream-filter-value` header (missing or null), else the header's rendering, or `''` when it
 * has none (a header that carries no value). Messages with equal keys have equal filter values.
 */
export function filterValueKey(raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  return renderScalar(raw) ?? '';
}

const NONE: readonly string[] = Object.freeze([]);
const CACHE_LIMIT = 4096;
// Publishers use few distinct filter values, and every consumer of a stream looks at the same
// message in turn: caching the split makes the per-consumer cost a lookup, not an allocation.
const cache = new Map<string, readonly string[]>();
let lastRaw: unknown;
let lastValues: readonly string[] = NONE;

/**
 * The values a message's `x-stream-filter-value` header tags it with (empty when it has none).
 * The result is shared and frozen: do not modify it.
 */
export function filterValues(raw: unknown): readonly string[] {
  if (raw === lastRaw) return lastValues;
  const text = renderScalar(raw);
  let values: readonly string[] | undefined;
  if (text === undefined) values = NONE;
  else {
    values = cache.get(text);
    if (values === undefined) {
      if (cache.size >= CACHE_LIMIT) cache.clear();
      values = Object.freeze(splitList(text));
      cache.set(text, values);
    }
  }
  lastRaw = raw;
  lastValues = values;
  return values;
}
