/**
 * The binary record format of stored messages, used by persistent storage adapters.
 *
 * ```
 * u16 properties present (bit i = PROPERTY_ORDER[i]) | str exchange | str routing key
 * property values, in PROPERTY_ORDER: strings as str, deliveryMode/priority as u8,
 *   timestamp as f64 ms, headers as a table
 * body: all remaining bytes
 *
 * str    = varint byte length | UTF-8
 * table  = varint entries | (str key | value)*
 * value  = u8 tag | payload:  's' str, 'i' i32, 'd' f64, 'l' i64, 'n' bigint as decimal str,
 *          't' true, 'f' false, 'v' null, 'u' undefined, 'D' Date as f64 ms,
 *          'x' varint length | bytes, 'A' varint items | value*, 'F' table
 * ```
 *
 * Numbers keep their kind: integers that fit 32 bits travel as `i`, everything else (fractions,
 * -0, large integers) as `d`, so a header reads back exactly as it was published. Encoding writes
 * into one growable scratch buffer and returns a view of it (valid until the next `encode`).
 */
import type { RecordCodec } from '../storage/types.js';
import type { FieldTable, FieldValue, MessageProperties, StoredMessage } from './types.js';

const PROPERTY_ORDER = [
  'contentType',
  'contentEncoding',
  'headers',
  'deliveryMode',
  'priority',
  'correlationId',
  'replyTo',
  'expiration',
  'messageId',
  'timestamp',
  'type',
  'userId',
  'appId',
] as const satisfies ReadonlyArray<keyof MessageProperties>;

type PropertyName = (typeof PROPERTY_ORDER)[number];

const T_STRING = 0x73; // s
const T_INT = 0x69; // i
const T_DOUBLE = 0x64; // d
const T_LONG = 0x6c; // l
const T_BIGINT = 0x6e; // n
const T_TRUE = 0x74; // t
const T_FALSE = 0x66; // f
const T_NULL = 0x76; // v
const T_UNDEFINED = 0x75; // u
const T_DATE = 0x44; // D
const T_BYTES = 0x78; // x
const T_ARRAY = 0x41; // A
const T_TABLE = 0x46; // F

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const EMPTY_PROPERTIES: Readonly<MessageProperties> = Object.freeze({});

/** Bytes the record accounts for besides its body and names (a rough, fixed overhead). */
const OVERHEAD = 16;

// --- encoding -------------------------------------------------------------------------------

let buf = Buffer.allocUnsafe(64 * 1024);
let pos = 0;

function ensure(extra: number): void {
  if (pos + extra <= buf.length) return;
  let size = buf.length * 2;
  while (size < pos + extra) size *= 2;
  const grown = Buffer.allocUnsafe(size);
  buf.copy(grown, 0, 0, pos);
  buf = grown;
}

function writeVarint(n: number): void {
  ensure(5);
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[pos++] = n;
}

function writeString(s: string): void {
  const length = s.length;
  if (length < 128) {
    // Short ASCII strings (the usual names and ids) are copied by hand: no byte count needed.
    ensure(length + 1);
    const start = pos + 1;
    let i = 0;
    for (; i < length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[start + i] = c;
    }
    if (i === length) {
      buf[pos] = length;
      pos = start + length;
      return;
    }
  }
  const bytes = Buffer.byteLength(s, 'utf8');
  writeVarint(bytes);
  ensure(bytes);
  pos += buf.write(s, pos, bytes, 'utf8');
}

function writeTable(table: FieldTable): void {
  let count = 0;
  for (const _ in table) count++;
  writeVarint(count);
  for (const key in table) {
    writeString(key);
    writeValue(table[key]);
  }
}

function writeValue(value: FieldValue): void {
  ensure(9);
  switch (typeof value) {
    case 'string':
      buf[pos++] = T_STRING;
      writeString(value);
      return;
    case 'number':
      if ((value | 0) === value && !Object.is(value, -0)) {
        buf[pos++] = T_INT;
        pos = buf.writeInt32LE(value, pos);
      } else {
        buf[pos++] = T_DOUBLE;
        pos = buf.writeDoubleLE(value, pos);
      }
      return;
    case 'boolean':
      buf[pos++] = value ? T_TRUE : T_FALSE;
      return;
    case 'bigint':
      if (value >= INT64_MIN && value <= INT64_MAX) {
        buf[pos++] = T_LONG;
        pos = buf.writeBigInt64LE(value, pos);
      } else {
        buf[pos++] = T_BIGINT;
        writeString(value.toString());
      }
      return;
    case 'undefined':
      buf[pos++] = T_UNDEFINED;
      return;
    case 'object':
      if (value === null) {
        buf[pos++] = T_NULL;
      } else if (value instanceof Date) {
        buf[pos++] = T_DATE;
        pos = buf.writeDoubleLE(value.getTime(), pos);
      } else if (value instanceof Uint8Array) {
        buf[pos++] = T_BYTES;
        writeVarint(value.byteLength);
        ensure(value.byteLength);
        buf.set(value, pos);
        pos += value.byteLength;
      } else if (Array.isArray(value)) {
        buf[pos++] = T_ARRAY;
        writeVarint(value.length);
        for (const item of value as readonly FieldValue[]) writeValue(item);
      } else {
        buf[pos++] = T_TABLE;
        writeTable(value as FieldTable);
      }
      return;
    default:
      throw new TypeError(`a ${typeof value} cannot be stored in a header`);
  }
}

function encode(message: StoredMessage): Uint8Array {
  pos = 2;
  const props = message.properties;
  let present = 0;
  writeString(message.exchange);
  writeString(message.routingKey);
  if (props !== EMPTY_PROPERTIES) {
    for (let i = 0; i < PROPERTY_ORDER.length; i++) {
      const name = PROPERTY_ORDER[i]!;
      const value = props[name];
      if (value === undefined) continue;
      present |= 1 << i;
      writeProperty(name, value);
    }
  }
  buf.writeUInt16LE(present, 0);
  const body = message.body;
  ensure(body.byteLength);
  buf.set(body, pos);
  pos += body.byteLength;
  return buf.subarray(0, pos);
}

function writeProperty(name: PropertyName, value: unknown): void {
  switch (name) {
    case 'headers':
      writeTable(value as FieldTable);
      return;
    case 'deliveryMode':
    case 'priority':
      ensure(1);
      buf[pos++] = value as number;
      return;
    case 'timestamp':
      ensure(8);
      pos = buf.writeDoubleLE((value as Date).getTime(), pos);
      return;
    default:
      writeString(value as string);
  }
}

// --- decoding -------------------------------------------------------------------------------

let input: Buffer = buf;
let at = 0;

/** Small copies are carved from a shared slab: a typed array of its own costs ~1 µs each. */
const SLAB_BYTES = 32 * 1024;
const SLAB_MAX_COPY = 4 * 1024;
let slab = new ArrayBuffer(SLAB_BYTES);
let slabUsed = 0;

/** A copy of `input[start, end)` that owns its bytes (they outlive the read buffer). */
function copyBytes(start: number, end: number): Uint8Array {
  const length = end - start;
  let bytes: Uint8Array;
  if (length > SLAB_MAX_COPY) bytes = new Uint8Array(length);
  else {
    if (slabUsed + length > SLAB_BYTES) {
      slab = new ArrayBuffer(SLAB_BYTES);
      slabUsed = 0;
    }
    bytes = new Uint8Array(slab, slabUsed, length);
    // Keep views 8-byte aligned, so a body can be viewed as wider typed arrays if needed.
    slabUsed += (length + 7) & ~7;
  }
  bytes.set(input.subarray(start, end));
  return bytes;
}

function readVarint(): number {
  let n = 0;
  let shift = 0;
  for (;;) {
    const b = input[at++];
    if (b === undefined) throw new RangeError('message record ends early');
    n += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return n;
    shift += 7;
  }
}

function readString(): string {
  const length = readVarint();
  const start = at;
  const end = start + length;
  if (end > input.length) throw new RangeError('message record ends early');
  at = end;
  if (length <= 24) {
    // Short ASCII strings are rebuilt by hand: cheaper than a call into the UTF-8 decoder.
    let s = '';
    for (let i = start; i < end; i++) {
      const c = input[i]!;
      if (c >= 0x80) return input.toString('utf8', start, end);
      s += String.fromCharCode(c);
    }
    return s;
  }
  return input.toString('utf8', start, end);
}

function readTable(): FieldTable {
  const count = readVarint();
  const table: Record<string, FieldValue> = {};
  for (let i = 0; i < count; i++) {
    const key = readString();
    const value = readValue();
    // A '__proto__' header is a plain key, never the object's prototype.
    if (key === '__proto__') {
      Object.defineProperty(table, key, {
        value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else table[key] = value;
  }
  return table;
}

function readValue(): FieldValue {
  const tag = input[at++];
  switch (tag) {
    case T_STRING:
      return readString();
    case T_INT:
      at += 4;
      return input.readInt32LE(at - 4);
    case T_DOUBLE:
      at += 8;
      return input.readDoubleLE(at - 8);
    case T_LONG:
      at += 8;
      return input.readBigInt64LE(at - 8);
    case T_BIGINT:
      return BigInt(readString());
    case T_TRUE:
      return true;
    case T_FALSE:
      return false;
    case T_NULL:
      return null;
    case T_UNDEFINED:
      return undefined;
    case T_DATE:
      at += 8;
      return new Date(input.readDoubleLE(at - 8));
    case T_BYTES: {
      const length = readVarint();
      if (at + length > input.length) throw new RangeError('message record ends early');
      at += length;
      return copyBytes(at - length, at);
    }
    case T_ARRAY: {
      const items: FieldValue[] = new Array(readVarint());
      for (let i = 0; i < items.length; i++) items[i] = readValue();
      return Object.freeze(items);
    }
    case T_TABLE:
      return Object.freeze(readTable());
    default:
      throw new RangeError(`unknown header value tag ${String(tag)}`);
  }
}

function decode(bytes: Uint8Array): StoredMessage {
  input = Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (input.length < 2) throw new RangeError('message record ends early');
  const present = input.readUInt16LE(0);
  at = 2;
  const exchange = readString();
  const routingKey = readString();
  let properties = EMPTY_PROPERTIES;
  if (present !== 0) {
    const props: Record<string, unknown> = {};
    for (let i = 0; i < PROPERTY_ORDER.length; i++) {
      if (present & (1 << i)) props[PROPERTY_ORDER[i]!] = readProperty(PROPERTY_ORDER[i]!);
    }
    properties = Object.freeze(props) as Readonly<MessageProperties>;
  }
  if (at > input.length) throw new RangeError('message record ends early');
  const body = copyBytes(at, input.length);
  input = buf;
  return Object.freeze({ exchange, routingKey, properties, body });
}

function readProperty(name: PropertyName): unknown {
  switch (name) {
    case 'headers':
      return Object.freeze(readTable());
    case 'deliveryMode':
    case 'priority':
      return input[at++];
    case 'timestamp':
      at += 8;
      return new Date(input.readDoubleLE(at - 8));
    default:
      return readString();
  }
}

// --- size -----------------------------------------------------------------------------------

/**
 * The record's accounted size: body, names, string properties and header names and string
 * values, plus a fixed overhead per property and header. It walks one level of headers only,
 * so it stays cheap while tracking what dominates real messages.
 */
function byteLength(message: StoredMessage): number {
  let size =
    OVERHEAD + message.body.byteLength + message.exchange.length + message.routingKey.length;
  const props = message.properties;
  if (props === EMPTY_PROPERTIES) return size;
  for (const key in props) {
    const value = props[key as PropertyName];
    if (typeof value === 'string') size += value.length + 1;
    else if (key === 'headers') {
      const headers = value as FieldTable;
      for (const name in headers) {
        const v = headers[name];
        size += name.length + 2 + (typeof v === 'string' ? v.length : 8);
      }
    } else size += 8;
  }
  return size;
}

/** The record codec of stored messages. */
export const messageCodec: RecordCodec<StoredMessage> = { byteLength, encode, decode };
