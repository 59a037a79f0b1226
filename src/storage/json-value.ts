import { isPlainTable } from '../table.js';
import type { JsonValue } from './types.js';

/**
 * Validates a metadata value and returns a deep, frozen copy of it, so that neither the caller
 * nor a reader can change stored state afterwards. Accepts `null`, booleans, finite numbers,
 * strings, arrays and plain objects; anything else (undefined, NaN, functions, Dates, class
 * instances, cycles) is a `TypeError` naming the path, because it would not survive a round
 * trip through JSON on a persistent adapter.
 */
export function frozenJsonCopy(value: unknown): JsonValue {
  return copy(value, '$', []);
}

function copy(value: unknown, path: string, ancestors: object[]): JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw notJson(path, String(value));
      return value;
    case 'object': {
      if (value === null) return null;
      if (ancestors.includes(value)) throw notJson(path, 'a circular reference');
      ancestors.push(value);
      let result: JsonValue;
      if (Array.isArray(value)) {
        result = Object.freeze(value.map((v, i) => copy(v, `${path}[${i}]`, ancestors)));
      } else {
        if (!isPlainTable(value)) {
          throw notJson(path, `a ${value.constructor?.name ?? 'non-plain'} object`);
        }
        // fromEntries defines own properties, so a '__proto__' key stays a plain key.
        result = Object.freeze(
          Object.fromEntries(
            Object.entries(value).map(([k, v]) => [k, copy(v, `${path}.${k}`, ancestors)]),
          ),
        );
      }
      ancestors.pop();
      return result;
    }
    default:
      throw notJson(path, typeof value);
  }
}

function notJson(path: string, what: string): TypeError {
  return new TypeError(`metadata value at ${path} must be JSON-compatible, got ${what}`);
}
