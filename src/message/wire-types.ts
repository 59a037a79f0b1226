/**
 * The AMQP type of a header value whose JavaScript value alone implies another one: a header
 * published over AMQP as a byte (`b`), a short (`s`), an unsigned int (`i`), a long (`l`) that
 * fits 32 bits, a float (`f`), an integral double (`d`) or a decimal (`D` and its scale) reads as a
 * plain `number`, and is delivered with the tag it came with, as RabbitMQ relays it.
 *
 * Users see plain values: the types sit on the table (or array) itself, under a symbol, in a
 * non-enumerable property that spreading, `Object.keys`, JSON and equality checks ignore. A table
 * whose values all carry their implied type (strings, booleans, 32-bit integers as `I`, dates as
 * `T`, ...) has none, so the common case costs one property miss. A type is only a hint: it is
 * used when the value still fits it (see {@link wireTypeFor}), so a value replaced after it was
 * read is encoded from its own kind.
 */
import { emptyTable } from '../table.js';

/**
 * A type tag that differs from the one a value's kind implies: `b B s u i l f d`, or `D` followed
 * by the decimal's scale (`D2`).
 */
export type WireType = string;

const WIRE_TYPES: unique symbol = Symbol('mqlite.wireTypes');

type Typed = { [WIRE_TYPES]?: Readonly<Record<string, WireType>> };

/** The wire types of a table's keys (or an array's indices), if any was recorded. */
export function wireTypesOf(container: object): Readonly<Record<string, WireType>> | undefined {
  return (container as Typed)[WIRE_TYPES];
}

/** Records that `container[key]` (an array index as a string) travels as `type`. */
export function setWireType(container: object, key: string, type: WireType): void {
  let types = (container as Typed)[WIRE_TYPES] as Record<string, WireType> | undefined;
  if (types === undefined) {
    types = emptyTable();
    Object.defineProperty(container, WIRE_TYPES, { value: types, enumerable: false });
  }
  types[key] = type;
}

/**
 * Gives `copy` the wire types of `source` (shared: recorded types are never changed once the
 * table holding them is complete). Returns `copy`.
 */
export function carryWireTypes<T extends object>(source: object, copy: T): T {
  const types = (source as Typed)[WIRE_TYPES];
  if (types !== undefined) {
    Object.defineProperty(copy, WIRE_TYPES, { value: types, enumerable: false });
  }
  return copy;
}

/** Records of one key's type, shared by the tables of a source without types of its own. */
const singleTypes = new Map<string, Readonly<Record<string, WireType>>>();

/**
 * Gives `copy` the wire types of `source` and `key` the type `type` besides (a new record when
 * `source` has types: those are shared). Returns `copy`.
 */
export function carryWireTypesWith<T extends object>(
  source: object,
  copy: T,
  key: string,
  type: WireType,
): T {
  const own = (source as Typed)[WIRE_TYPES];
  const id = `${key}\0${type}`;
  let types = own === undefined ? singleTypes.get(id) : undefined;
  if (types === undefined) {
    const made = Object.assign(emptyTable<WireType>(), own);
    made[key] = type;
    types = Object.freeze(made);
    if (own === undefined) singleTypes.set(id, types);
  }
  Object.defineProperty(copy, WIRE_TYPES, { value: types, enumerable: false });
  return copy;
}

/**
 * The type `value` travels as, when it was recorded for `key` and the value still fits it;
 * undefined to encode it from its kind.
 */
export function wireTypeFor(
  types: Readonly<Record<string, WireType>> | undefined,
  key: string,
  value: unknown,
): WireType | undefined {
  const type = types?.[key];
  if (type === undefined || typeof value !== 'number') return undefined;
  return fitsWireType(type, value) ? type : undefined;
}

function fitsWireType(type: WireType, v: number): boolean {
  switch (type) {
    case 'b':
      return Number.isInteger(v) && v >= -0x80 && v <= 0x7f;
    case 'B':
      return Number.isInteger(v) && v >= 0 && v <= 0xff;
    case 's':
      return Number.isInteger(v) && v >= -0x8000 && v <= 0x7fff;
    case 'u':
      return Number.isInteger(v) && v >= 0 && v <= 0xffff;
    case 'i':
      return Number.isInteger(v) && v >= 0 && v <= 0xffffffff;
    case 'l':
      return Number.isSafeInteger(v);
    case 'f':
      return Number.isFinite(v) ? Math.fround(v) === v : true;
    case 'd':
      return true;
    default: {
      const unscaled = decimalUnscaled(type, v);
      return unscaled !== undefined;
    }
  }
}

/** The unscaled integer of `v` as a decimal of type `D<scale>`, if it is one. */
export function decimalUnscaled(type: WireType, v: number): number | undefined {
  if (type.charCodeAt(0) !== 0x44 || type.length < 2) return undefined;
  const scale = Number(type.slice(1));
  if (!Number.isInteger(scale) || scale < 0 || scale > 255) return undefined;
  const unscaled = Math.round(v * 10 ** scale);
  if (unscaled < 0 || unscaled > 0xffffffff || unscaled / 10 ** scale !== v) return undefined;
  return unscaled;
}

/**
 * The wire type to record for a value read with `tag` as the plain number `value`, or undefined
 * when encoding the number from its kind gives `tag` back (`I` for 32-bit integers, `l` for
 * wider ones, `d` for the rest).
 */
export function wireTypeOfNumber(tag: string, value: number): WireType | undefined {
  const int32 = Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff;
  switch (tag) {
    case 'I':
      return undefined;
    case 'l':
      return int32 ? 'l' : undefined;
    case 'd':
      return Number.isSafeInteger(value) && !Object.is(value, -0) ? 'd' : undefined;
    default:
      return tag;
  }
}
