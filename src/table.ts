/**
 * Tables of user-chosen keys (headers, arguments, config and exchange names): objects with no
 * inherited properties, so that `__proto__`, `constructor` or `toString` are keys like any other
 * and reading a key that is absent finds nothing. Their prototype is an empty, frozen object
 * without a prototype: unlike `Object.create(null)`, whose objects V8 keeps in its slow
 * dictionary mode, these keep fast properties (copying a header table costs what a literal does).
 */

const EMPTY_PROTOTYPE: object = Object.freeze(Object.create(null));

function Table(): void {}
Table.prototype = EMPTY_PROTOTYPE;

const TableClass = Table as unknown as new () => Record<string, never>;

/**
 * Whether `value` is a table as the library reads one: a plain object, one without a prototype,
 * or one made by {@link emptyTable}.
 */
export function isPlainTable(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null || proto === EMPTY_PROTOTYPE;
}

/** A new, empty table with no inherited properties. */
export function emptyTable<V>(): Record<string, V> {
  return new TableClass() as Record<string, V>;
}
