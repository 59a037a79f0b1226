/**
 * The identity of a last-value-queue key. Two header values are the same key when they have the
 * same type and value: the string "3" and the number 3 differ; tables and arrays compare by their
 * `fast-json-stable-stringify` rendering, so `{ a: 1, b: 2 }` equals `{ b: 2, a: 1 }`.
 *
 * The identity is a primitive usable directly as a `Map` key (whose SameValueZero comparison
 * already tells strings from numbers, booleans and bigints). A plain string is its own identity,
 * so the common case allocates nothing; composite values become strings behind a `\u0000` tag
 * that no plain string can collide with (plain strings that start with `\u0000` are escaped).
 */
import stableStringify from 'fast-json-stable-stringify';
import type { FieldValue } from '../../message/types.js';
import { emptyTable } from '../../table.js';

/** A normalized key: equal keys are `===` (SameValueZero for `Map`). */
export type LvqKey = string | number | boolean | bigint;

const TAG = '\u0000';

/**
 * The key of a header value, or undefined when the value names no key (the header is absent,
 * `undefined` or `null`): such a message is an ordinary FIFO entry.
 */
export function lvqKey(value: FieldValue): LvqKey | undefined {
  switch (typeof value) {
    case 'string':
      return value.length > 0 && value.charCodeAt(0) === 0 ? `${TAG}s${value}` : value;
    case 'number':
    case 'boolean':
    case 'bigint':
      return value;
    case 'object':
      if (value === null) return undefined;
      if (value instanceof Date) return `${TAG}d${value.getTime()}`;
      if (value instanceof Uint8Array) return `${TAG}b${Buffer.from(value).toString('base64')}`;
      return `${TAG}j${render(value)}`;
    default:
      return undefined;
  }
}

function render(value: object): string {
  try {
    return stableStringify(value);
  } catch {
    // JSON has no bigint: render nested ones as tagged strings instead of failing the publish.
    return stableStringify(withoutBigints(value));
  }
}

function withoutBigints(value: unknown): unknown {
  if (typeof value === 'bigint') return `${TAG}n${value}`;
  if (Array.isArray(value)) return value.map(withoutBigints);
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = emptyTable();
    for (const [k, v] of Object.entries(value)) out[k] = withoutBigints(v);
    return out;
  }
  return value;
}
