/**
 * AMQP field tables and arrays with RabbitMQ's type tags:
 *
 * | tag | type | | tag | type |
 * | --- | --- | --- | --- | --- |
 * | `t` | boolean | | `f` | float32 |
 * | `b` | int8 | | `d` | float64 |
 * | `B` | uint8 | | `D` | decimal (scale, uint32) |
 * | `s` | int16 | | `S` | long string |
 * | `u` | uint16 | | `x` | byte array |
 * | `I` | int32 | | `A` | array |
 * | `i` | uint32 | | `V` | void |
 * | `l` | int64 | | `T` | timestamp (seconds) |
 * | `F` | nested table | | | |
 *
 * Two views: typed (`TypedTable`), which keeps every value's tag so a table re-encodes to the
 * same bytes, and plain (`FieldTable`), the JavaScript values the broker stores. A plain table
 * read here records the tag of each number whose kind implies another (message/wire-types.ts),
 * and is written back with it, so it re-encodes to the same tags too. Other plain values are
 * encoded with the tag their kind implies: integers of 32 bits as `I`, wider ones and bigints as
 * `l`, other numbers as `d`, `Date` as `T`, `null` as `V`.
 */
import type { FieldTable, FieldValue } from '../../message/types.js';
import {
  decimalUnscaled,
  setWireType,
  wireTypeFor,
  wireTypeOfNumber,
  wireTypesOf,
} from '../../message/wire-types.js';
import { type Reader, WireSyntaxError, type Writer } from './bytes.js';

/** A field value's type tag. */
export type AmqpType =
  | 't'
  | 'b'
  | 'B'
  | 's'
  | 'u'
  | 'I'
  | 'i'
  | 'l'
  | 'f'
  | 'd'
  | 'D'
  | 'S'
  | 'x'
  | 'A'
  | 'V'
  | 'T'
  | 'F';

/** A decimal: `unscaled / 10^scale`. */
export interface Decimal {
  readonly scale: number;
  readonly unscaled: number;
}

/** A field value with its tag. */
export type TypedValue =
  | { readonly type: 't'; readonly value: boolean }
  | { readonly type: 'b' | 'B' | 's' | 'u' | 'I' | 'i' | 'f' | 'd'; readonly value: number }
  | { readonly type: 'l'; readonly value: bigint }
  | { readonly type: 'D'; readonly value: Decimal }
  | { readonly type: 'S'; readonly value: string }
  | { readonly type: 'x'; readonly value: Uint8Array }
  | { readonly type: 'A'; readonly value: readonly TypedValue[] }
  | { readonly type: 'V'; readonly value: null }
  | { readonly type: 'T'; readonly value: bigint }
  | { readonly type: 'F'; readonly value: TypedTable };

/** A table with every value's tag, in wire order. */
export type TypedTable = readonly (readonly [string, TypedValue])[];

/** Nesting deeper than this is refused (a hostile frame must not exhaust the stack). */
const MAX_DEPTH = 64;

// --- decoding --------------------------------------------------------------------------------

/** Reads a table, keeping every value's tag. */
export function readTypedTable(r: Reader, depth = 0): TypedTable {
  const entries: [string, TypedValue][] = [];
  forEachEntry(r, depth, (key, tag) => entries.push([key, readTyped(r, tag, depth)]));
  return entries;
}

/**
 * Reads a table as plain values, recording the wire type of each number whose kind implies
 * another tag (see message/wire-types.ts). Keys such as `__proto__` become own properties.
 */
export function readTable(r: Reader, depth = 0): FieldTable {
  const table: FieldTable = {};
  forEachEntry(r, depth, (key, tag) => {
    const value = readPlain(r, tag, depth);
    setField(table, key, value);
    if (typeof value === 'number') recordType(table, key, tag, value);
  });
  return table;
}

function recordType(container: object, key: string, tag: number, value: number): void {
  const type = wireTypeOfNumber(String.fromCharCode(tag), value);
  if (type === undefined) return;
  setWireType(container, key, type === 'D' ? `D${lastScale}` : type);
}

/** The scale of the decimal read last (its plain value is a number). */
let lastScale = 0;

/** Sets an own property, never a prototype, whatever the key. */
export function setField(table: FieldTable, key: string, value: FieldValue): void {
  if (key === '__proto__') {
    Object.defineProperty(table, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    table[key] = value;
  }
}

function forEachEntry(r: Reader, depth: number, each: (key: string, tag: number) => void): void {
  if (depth > MAX_DEPTH) throw new WireSyntaxError('field table nested too deeply');
  const length = r.u32();
  const end = r.pos + length;
  if (end > r.end) throw new WireSyntaxError('field table longer than its frame');
  while (r.pos < end) {
    const key = r.shortstr();
    each(key, r.u8());
  }
  if (r.pos !== end) throw new WireSyntaxError('field table length does not match its entries');
}

function forEachItem(r: Reader, depth: number, each: (tag: number) => void): void {
  if (depth > MAX_DEPTH) throw new WireSyntaxError('field array nested too deeply');
  const length = r.u32();
  const end = r.pos + length;
  if (end > r.end) throw new WireSyntaxError('field array longer than its frame');
  while (r.pos < end) each(r.u8());
  if (r.pos !== end) throw new WireSyntaxError('field array length does not match its items');
}

function readTyped(r: Reader, tag: number, depth: number): TypedValue {
  switch (tag) {
    case 0x41: {
      const items: TypedValue[] = [];
      forEachItem(r, depth + 1, (t) => items.push(readTyped(r, t, depth + 1)));
      return { type: 'A', value: items };
    }
    case 0x46:
      return { type: 'F', value: readTypedTable(r, depth + 1) };
    case 0x6c:
      return { type: 'l', value: r.i64() };
    case 0x54:
      return { type: 'T', value: r.u64() };
    case 0x44:
      return { type: 'D', value: { scale: r.u8(), unscaled: r.u32() } };
    case 0x78:
      return { type: 'x', value: r.longstr() };
    default: {
      const value = readScalar(r, tag);
      return { type: String.fromCharCode(tag), value } as TypedValue;
    }
  }
}

function readPlain(r: Reader, tag: number, depth: number): FieldValue {
  switch (tag) {
    case 0x41: {
      const items: FieldValue[] = [];
      forEachItem(r, depth + 1, (t) => {
        const value = readPlain(r, t, depth + 1);
        if (typeof value === 'number') recordType(items, String(items.length), t, value);
        items.push(value);
      });
      return items;
    }
    case 0x46:
      return readTable(r, depth + 1);
    case 0x6c: {
      const v = r.i64();
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v;
    }
    case 0x54:
      return r.timestamp();
    case 0x44: {
      const scale = r.u8();
      lastScale = scale;
      return r.u32() / 10 ** scale;
    }
    case 0x78:
      return new Uint8Array(r.longstr());
    default:
      return readScalar(r, tag);
  }
}

/** The tags whose typed and plain values are the same JavaScript value. */
function readScalar(r: Reader, tag: number): boolean | number | string | null {
  switch (tag) {
    case 0x74:
      return r.u8() !== 0;
    case 0x62:
      return r.i8();
    case 0x42:
      return r.u8();
    case 0x73:
      return r.i16();
    case 0x75:
      return r.u16();
    case 0x49:
      return r.i32();
    case 0x69:
      return r.u32();
    case 0x66:
      return r.f32();
    case 0x64:
      return r.f64();
    case 0x53:
      return r.longstr().toString('utf8');
    case 0x56:
      return null;
    default:
      throw new WireSyntaxError(`unknown field table type '${printable(tag)}'`);
  }
}

function printable(tag: number): string {
  return tag >= 0x20 && tag < 0x7f ? String.fromCharCode(tag) : `0x${tag.toString(16)}`;
}

// --- encoding --------------------------------------------------------------------------------

/** Writes a table with the tags it carries. */
export function writeTypedTable(w: Writer, table: TypedTable): void {
  withLength(w, () => {
    for (const [key, value] of table) {
      w.shortstr(key);
      writeTyped(w, value);
    }
  });
}

function writeTyped(w: Writer, v: TypedValue): void {
  w.u8(v.type.charCodeAt(0));
  switch (v.type) {
    case 't':
      w.u8(v.value ? 1 : 0);
      return;
    case 'b':
      w.i8(v.value);
      return;
    case 'B':
      w.u8(v.value);
      return;
    case 's':
      w.i16(v.value);
      return;
    case 'u':
      w.u16(v.value);
      return;
    case 'I':
      w.i32(v.value);
      return;
    case 'i':
      w.u32(v.value);
      return;
    case 'l':
      w.i64(v.value);
      return;
    case 'f':
      w.f32(v.value);
      return;
    case 'd':
      w.f64(v.value);
      return;
    case 'D':
      w.u8(v.value.scale);
      w.u32(v.value.unscaled);
      return;
    case 'S':
    case 'x':
      w.longstr(v.value);
      return;
    case 'A':
      withLength(w, () => {
        for (const item of v.value) writeTyped(w, item);
      });
      return;
    case 'V':
      return;
    case 'T':
      w.u64(v.value);
      return;
    case 'F':
      writeTypedTable(w, v.value);
      return;
  }
}

/** Writes a table of plain values; `undefined` values are left out. */
export function writeTable(w: Writer, table: Readonly<FieldTable> | undefined): void {
  if (table === undefined || isEmpty(table)) {
    // Most publishers send an empty table of headers with every message.
    w.u32(0);
    return;
  }
  withLength(w, () => {
    if (!table) return;
    const types = wireTypesOf(table);
    for (const key of Object.keys(table)) {
      const value = table[key];
      if (value === undefined) continue;
      w.shortstr(key);
      const type = wireTypeFor(types, key, value);
      if (type === undefined) writePlain(w, value);
      else writeNumber(w, type, value as number);
    }
  });
}

function isEmpty(table: Readonly<FieldTable>): boolean {
  for (const _ in table) return false;
  return true;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function writePlain(w: Writer, v: FieldValue): void {
  switch (typeof v) {
    case 'string':
      w.u8(0x53);
      w.longstr(v);
      return;
    case 'boolean':
      w.u8(0x74);
      w.u8(v ? 1 : 0);
      return;
    case 'number':
      if (Number.isInteger(v) && !Object.is(v, -0)) {
        if (v >= -0x80000000 && v <= 0x7fffffff) {
          w.u8(0x49);
          w.i32(v);
          return;
        }
        if (Number.isSafeInteger(v)) {
          w.u8(0x6c);
          w.i64(BigInt(v));
          return;
        }
      }
      w.u8(0x64);
      w.f64(v);
      return;
    case 'bigint':
      if (v < INT64_MIN || v > INT64_MAX) throw new RangeError(`${v} does not fit an AMQP long`);
      w.u8(0x6c);
      w.i64(v);
      return;
    case 'undefined':
      w.u8(0x56);
      return;
    case 'object':
      if (v === null) {
        w.u8(0x56);
        return;
      }
      if (v instanceof Date) {
        w.u8(0x54);
        w.timestamp(v);
        return;
      }
      if (v instanceof Uint8Array) {
        w.u8(0x78);
        w.longstr(v);
        return;
      }
      if (Array.isArray(v)) {
        w.u8(0x41);
        withLength(w, () => {
          const types = wireTypesOf(v);
          const items = v as readonly FieldValue[];
          for (let i = 0; i < items.length; i++) {
            const item = items[i]!;
            const type = wireTypeFor(types, String(i), item);
            if (type === undefined) writePlain(w, item);
            else writeNumber(w, type, item as number);
          }
        });
        return;
      }
      w.u8(0x46);
      writeTable(w, v as FieldTable);
      return;
    default:
      throw new TypeError(`a ${typeof v} cannot be sent in a field table`);
  }
}

/** Writes a number with the wire type it was read with (one {@link wireTypeFor} accepted). */
function writeNumber(w: Writer, type: string, v: number): void {
  w.u8(type.charCodeAt(0));
  switch (type) {
    case 'b':
      w.i8(v);
      return;
    case 'B':
      w.u8(v);
      return;
    case 's':
      w.i16(v);
      return;
    case 'u':
      w.u16(v);
      return;
    case 'i':
      w.u32(v);
      return;
    case 'l':
      w.i64(BigInt(v));
      return;
    case 'f':
      w.f32(v);
      return;
    case 'd':
      w.f64(v);
      return;
    default:
      w.u8(Number(type.slice(1)));
      w.u32(decimalUnscaled(type, v)!);
  }
}

/** Writes a u32 length, then what `body` writes, then patches the length. */
function withLength(w: Writer, body: () => void): void {
  w.u32(0);
  const start = w.pos;
  body();
  w.buf.writeUInt32BE(w.pos - start, start - 4);
}
