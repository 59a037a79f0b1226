/**
 * Field-table values as the exchanges need them: RabbitMQ's header equality, a canonical identity
 * key for binding arguments, AMQP type names for error messages, and a JSON form for persistence.
 */

import type { FieldTable, FieldValue } from '../message/types.js';
import type { WireType } from '../message/wire-types.js';
import type { JsonValue } from '../storage/types.js';
import { emptyTable } from '../table.js';

const encoder = new TextEncoder();

/**
 * Header equality as RabbitMQ's headers exchange compares values (Erlang `==`): numbers compare
 * by value whatever their width (`1`, `1.0` and `1n` are equal), strings and byte arrays by
 * their bytes, booleans only with booleans, arrays and tables element by element. A `Date`
 * (an AMQP timestamp) compares as its whole seconds.
 */
export function fieldEquals(a: FieldValue, b: FieldValue): boolean {
  if (a === b) return true;
  if (typeof a === 'string' && typeof b === 'string') return false;
  const na = numeric(a);
  if (na !== undefined) {
    const nb = numeric(b);
    return nb !== undefined && numbersEqual(na, nb);
  }
  if (typeof a === 'string' || a instanceof Uint8Array) {
    if (typeof b !== 'string' && !(b instanceof Uint8Array)) return false;
    return bytesEqual(
      typeof a === 'string' ? encoder.encode(a) : a,
      typeof b === 'string' ? encoder.encode(b) : b,
    );
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!fieldEquals(a[i], b[i])) return false;
    return true;
  }
  if (isTable(a)) {
    if (!isTable(b)) return false;
    const keys = definedKeys(a);
    if (keys.length !== definedKeys(b).length) return false;
    for (const k of keys) if (b[k] === undefined || !fieldEquals(a[k], b[k])) return false;
    return true;
  }
  return false;
}

function numeric(v: FieldValue): number | bigint | undefined {
  if (typeof v === 'number' || typeof v === 'bigint') return v;
  if (v instanceof Date) return Math.floor(v.getTime() / 1000);
  return undefined;
}

function numbersEqual(a: number | bigint, b: number | bigint): boolean {
  if (typeof a === typeof b) return a === b;
  // Loose equality compares a bigint and a number by exact mathematical value.
  // biome-ignore lint/suspicious/noDoubleEquals: deliberate mixed bigint/number comparison
  return a == b;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isTable(v: FieldValue): v is { readonly [key: string]: FieldValue } {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    !(v instanceof Uint8Array)
  );
}

function definedKeys(t: { readonly [key: string]: FieldValue }): string[] {
  return Object.keys(t).filter((k) => t[k] !== undefined);
}

/**
 * A canonical string for a field value: equal for tables with the same entries in any key order,
 * different for values of different types. Used as binding identity (bind and unbind must give the
 * same arguments, as in AMQP).
 */
export function fieldKey(v: FieldValue): string {
  return JSON.stringify(toJsonField(v, true));
}

/** RabbitMQ's names of the number tags a value may have travelled as (wire-types.ts). */
const WIRE_TYPE_NAMES: Readonly<Record<string, string>> = {
  b: 'byte',
  B: 'unsignedbyte',
  s: 'short',
  u: 'unsignedshort',
  I: 'signedint',
  i: 'unsignedint',
  l: 'long',
  f: 'float',
  d: 'double',
  D: 'decimal',
};

/**
 * The AMQP field type a value would be sent as, in RabbitMQ's spelling ('longstr', 'signedint',
 * 'double', 'bool', 'table', 'array', 'timestamp', 'long', 'binary', 'void'), for error messages;
 * `wireType`, the tag a number travelled as, names its own type ('byte', 'short', ...).
 */
export function amqpTypeName(v: FieldValue, wireType?: WireType): string {
  if (wireType !== undefined && typeof v === 'number') {
    return WIRE_TYPE_NAMES[wireType[0]!] ?? amqpTypeName(v);
  }
  if (v === null || v === undefined) return 'void';
  switch (typeof v) {
    case 'string':
      return 'longstr';
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'long';
    case 'number':
      return Number.isInteger(v) ? 'signedint' : 'double';
  }
  if (v instanceof Date) return 'timestamp';
  if (v instanceof Uint8Array) return 'binary';
  return Array.isArray(v) ? 'array' : 'table';
}

/** One side of a redeclaration: the argument's value (undefined: absent) and its wire tag. */
export interface ComparedArgument {
  readonly value: FieldValue;
  readonly wireType?: WireType | undefined;
}

/**
 * "received … but current is …", as RabbitMQ words an inequivalent argument: the bare values
 * when both sides have one, the typed form ("the value '5' of type 'byte'", or "none") when one
 * side lacks it.
 */
export function inequivalence(received: ComparedArgument, current: ComparedArgument): string {
  if (received.value !== undefined && current.value !== undefined) {
    return `received '${describeField(received.value)}' but current is '${describeField(current.value)}'`;
  }
  const typed = ({ value, wireType }: ComparedArgument) =>
    value === undefined
      ? 'none'
      : `the value '${describeField(value)}' of type '${amqpTypeName(value, wireType)}'`;
  return `received ${typed(received)} but current is ${typed(current)}`;
}

/** A value as RabbitMQ quotes it in messages: `'x'` for strings, the JSON-ish text otherwise. */
export function describeField(v: FieldValue): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return v.toString();
  return JSON.stringify(toJsonField(v, false));
}

/**
 * The JSON form of a field value, for persistence. Strings, booleans, finite numbers and null are
 * themselves; everything else is a one-key tagged object (`$a` array, `$t` table, `$b` bigint,
 * `$d` date in ms, `$u8` base64 bytes, `$n` non-finite number), so no value is ambiguous.
 * Table entries whose value is `undefined` are left out.
 * @param sortKeys sort table keys (for canonical identity keys).
 */
export function toJsonField(v: FieldValue, sortKeys = false): JsonValue {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : { $n: String(v) };
    case 'bigint':
      return { $b: v.toString() };
  }
  if (v instanceof Date) return { $d: v.getTime() };
  if (v instanceof Uint8Array) return { $u8: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return { $a: v.map((e) => toJsonField(e, sortKeys)) };
  return { $t: toJsonTable(v as FieldTable, sortKeys) };
}

/** The JSON form of a field table (see `toJsonField`). */
export function toJsonTable(t: Readonly<FieldTable>, sortKeys = false): Record<string, JsonValue> {
  const keys = definedKeys(t);
  if (sortKeys) keys.sort();
  const out: Record<string, JsonValue> = emptyTable();
  for (const k of keys) out[k] = toJsonField(t[k], sortKeys);
  return out;
}

/** Reverses `toJsonField`. Throws `TypeError` on input it did not produce. */
export function fromJsonField(j: JsonValue): FieldValue {
  if (j === null || typeof j !== 'object') return j;
  if (Array.isArray(j)) throw new TypeError('malformed field value: bare array');
  const obj = j as { readonly [key: string]: JsonValue };
  const [tag, ...rest] = Object.keys(obj);
  const payload = tag === undefined ? undefined : obj[tag];
  if (rest.length === 0 && payload !== undefined) {
    switch (tag) {
      case '$a':
        if (Array.isArray(payload)) return payload.map(fromJsonField);
        break;
      case '$t':
        if (typeof payload === 'object' && payload !== null && !Array.isArray(payload)) {
          return fromJsonTable(payload as { readonly [key: string]: JsonValue });
        }
        break;
      case '$b':
        if (typeof payload === 'string') return BigInt(payload);
        break;
      case '$d':
        if (typeof payload === 'number') return new Date(payload);
        break;
      case '$u8':
        if (typeof payload === 'string') return new Uint8Array(Buffer.from(payload, 'base64'));
        break;
      case '$n':
        if (typeof payload === 'string') return Number(payload);
        break;
    }
  }
  throw new TypeError(`malformed field value: ${JSON.stringify(j)}`);
}

/** Reverses `toJsonTable`. */
export function fromJsonTable(j: { readonly [key: string]: JsonValue }): FieldTable {
  const out: FieldTable = emptyTable();
  for (const [k, v] of Object.entries(j)) out[k] = fromJsonField(v);
  return out;
}
