/**
 * The binary record format of stored messages, used by persistent storage adapters.
 *
 * ```
 * u16 properties present (bits P_*) | str exchange | str routing key
 * property values, in bit order: strings as str, deliveryMode/priority as u8,
 *   timestamp as f64 ms, headers as a table
 * body: all remaining bytes
 *
 * str    = varint byte length | UTF-8
 * table  = varint entries | (str key | value)*
 * value  = u8 tag | payload:  's' str, 'i' i32, 'd' f64, 'l' i64, 'n' bigint as decimal str,
 *          't' true, 'f' false, 'v' null, 'u' undefined, 'D' Date as f64 ms,
 *          'x' varint length | bytes, 'A' varint items | value*, 'F' table,
 *          'w' str wire type | value (format 2 only)
 * ```
 *
 * Numbers keep their kind: integers that fit 32 bits travel as `i`, everything else (fractions,
 * -0, large integers) as `d`, so a header reads back exactly as it was published. `encode` writes
 * into one growable scratch buffer and returns a view of it (valid until the next `encode`);
 * `encodeInto` writes the same bytes straight into the caller's buffer (a log's write buffer).
 * `decode` and `decodeFrom` copy the body out of the caller's bytes; `decodeView`, for bytes an
 * adapter never reuses, keeps it as a view of them (a `PackedMessage`, which makes the view when
 * the body is first read).
 *
 * Format 2 is format 1 plus the AMQP wire type of header numbers published over AMQP with a tag
 * their kind does not imply (a byte, a short, a float: see wire-types.ts): such a value is
 * prefixed with `w` and the record sets bit 15 of the properties word. Records without one, the
 * usual case, are written exactly as format 1 was. Format 1 records are already on users' disks,
 * pinned by test/storage/fixtures/codec-v1.bin: a change must keep reading them. An unknown
 * property bit or value tag is refused (a `RangeError`, reported by the log as corruption), never
 * skipped; so is a `w` value in a format 1 record.
 */
import { Buffer } from 'node:buffer';
import { copyInto } from '../storage/bytes.js';
import type { RecordCodec } from '../storage/types.js';
import { emptyTable } from '../table.js';
import { EMPTY_PROPERTIES, priorityOnlyProperties } from './normalize.js';
import { messagePacking, PackedMessage } from './packed-message.js';
import type { FieldTable, FieldValue, MessageProperties, StoredMessage } from './types.js';
import { setWireType, type WireType, wireTypeFor, wireTypesOf } from './wire-types.js';

/** Bits of the properties-present word, in the order the values follow it. */
const P_CONTENT_TYPE = 1 << 0;
const P_CONTENT_ENCODING = 1 << 1;
const P_HEADERS = 1 << 2;
const P_DELIVERY_MODE = 1 << 3;
const P_PRIORITY = 1 << 4;
const P_CORRELATION_ID = 1 << 5;
const P_REPLY_TO = 1 << 6;
const P_EXPIRATION = 1 << 7;
const P_MESSAGE_ID = 1 << 8;
const P_TIMESTAMP = 1 << 9;
const P_TYPE = 1 << 10;
const P_USER_ID = 1 << 11;
const P_APP_ID = 1 << 12;
const P_ALL = (1 << 13) - 1;
/** Format 2: the headers hold `w` values (a value's AMQP wire type, see wire-types.ts). */
const P_WIRE_TYPES = 1 << 15;

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
const T_WIRE = 0x77; // w, format 2

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Bytes the record accounts for besides its body and names (a rough, fixed overhead). */
const OVERHEAD = 16;

// --- encoding -------------------------------------------------------------------------------

/** The output of the running encode: the scratch buffer, or the target of `encodeInto`. */
let buf: Buffer = Buffer.allocUnsafe(64 * 1024);
/** The scratch buffer as a plain Uint8Array: `encode` returns a view of it. */
let bufBytes = plainView(buf);
let pos = 0;
/** Set while `encodeInto` runs: `buf` is the caller's and cannot grow. */
let fixed = false;
/** Thrown by `ensure` when a fixed target is full; `encodeInto` turns it into -1. */
const NO_ROOM = new Error('no room');

function plainView(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

/** Makes room for `extra` more bytes at `pos`. Small, to be inlined: growing is apart. */
function ensure(extra: number): void {
  if (pos + extra > buf.length) grow(extra);
}

function grow(extra: number): void {
  if (fixed) throw NO_ROOM;
  let size = buf.length * 2;
  while (size < pos + extra) size *= 2;
  const grown = Buffer.allocUnsafe(size);
  buf.copy(grown, 0, 0, pos);
  buf = grown;
  bufBytes = plainView(grown);
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
  // One pass: the entry count goes in a byte reserved ahead of the entries.
  ensure(1);
  const at = pos++;
  let count = 0;
  const types = wireTypesOf(table);
  for (const key in table) {
    writeString(key);
    const value = table[key];
    if (types !== undefined) writeWireType(wireTypeFor(types, key, value));
    writeValue(value);
    count++;
  }
  if (count < 0x80) {
    buf[at] = count;
    return;
  }
  // Over 127 entries the count needs more bytes: move the entries up to make room.
  let extra = 0;
  for (let n = count >>> 7; n > 0; n >>>= 7) extra++;
  ensure(extra);
  const end = pos;
  buf.copyWithin(at + 1 + extra, at + 1, end);
  pos = at;
  writeVarint(count);
  pos = end + extra;
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
        writeVarint(value.length);
        ensure(value.length);
        copyInto(buf, value, pos);
        pos += value.length;
      } else if (Array.isArray(value)) {
        buf[pos++] = T_ARRAY;
        writeVarint(value.length);
        const types = wireTypesOf(value);
        const items = value as readonly FieldValue[];
        for (let i = 0; i < items.length; i++) {
          if (types !== undefined) writeWireType(wireTypeFor(types, String(i), items[i]));
          writeValue(items[i]);
        }
      } else {
        buf[pos++] = T_TABLE;
        writeTable(value as FieldTable);
      }
      return;
    default:
      throw new TypeError(`a ${typeof value} cannot be stored in a header`);
  }
}

/** Set once the record being written holds a `w` value: it is then in format 2. */
let wroteWireType = false;

/** The `w` prefix of a value that travels as `type` over AMQP (nothing when undefined). */
function writeWireType(type: WireType | undefined): void {
  if (type === undefined) return;
  ensure(1);
  buf[pos++] = T_WIRE;
  writeString(type);
  wroteWireType = true;
}

/** Writes the record into `buf` from `start`; `pos` ends after it. */
function write(message: StoredMessage, start: number): void {
  pos = start;
  ensure(2);
  pos += 2;
  writeString(message.exchange);
  writeString(message.routingKey);
  const properties = message.properties;
  wroteWireType = false;
  let present = properties === EMPTY_PROPERTIES ? 0 : writeProperties(properties);
  if (wroteWireType) present |= P_WIRE_TYPES;
  buf[start] = present;
  buf[start + 1] = present >>> 8;
  const body = message.body;
  ensure(body.length);
  copyInto(buf, body, pos);
  pos += body.length;
}

function encode(message: StoredMessage): Uint8Array {
  write(message, 0);
  return bufBytes.subarray(0, pos);
}

/**
 * `encode` into `target` from `offset`, with no scratch copy. Returns the length, or -1 when the
 * record may not fit (bounds are checked before each field, so a record that would just fit can
 * be refused too). A `Buffer` target is written as is; another Uint8Array costs a Buffer view.
 */
function encodeInto(message: StoredMessage, target: Uint8Array, offset: number): number {
  const scratch = buf;
  buf = Buffer.isBuffer(target)
    ? target
    : Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  fixed = true;
  try {
    write(message, offset);
    return pos - offset;
  } catch (error) {
    if (error === NO_ROOM) return -1;
    throw error;
  } finally {
    buf = scratch;
    fixed = false;
  }
}

/** The bit of each property name. */
function propertyBit(name: string): number {
  switch (name) {
    case 'contentType':
      return P_CONTENT_TYPE;
    case 'contentEncoding':
      return P_CONTENT_ENCODING;
    case 'headers':
      return P_HEADERS;
    case 'deliveryMode':
      return P_DELIVERY_MODE;
    case 'priority':
      return P_PRIORITY;
    case 'correlationId':
      return P_CORRELATION_ID;
    case 'replyTo':
      return P_REPLY_TO;
    case 'expiration':
      return P_EXPIRATION;
    case 'messageId':
      return P_MESSAGE_ID;
    case 'timestamp':
      return P_TIMESTAMP;
    case 'type':
      return P_TYPE;
    case 'userId':
      return P_USER_ID;
    case 'appId':
      return P_APP_ID;
    default:
      return 0;
  }
}

/**
 * Writes the properties present, in bit order. The names come from the object's own keys: a
 * process sees properties objects of many shapes, so testing all thirteen names on each would
 * be thirteen megamorphic lookups, where a message usually carries one or two.
 */
function writeProperties(p: Readonly<MessageProperties>): number {
  let present = 0;
  for (const name in p) {
    if ((p as Record<string, unknown>)[name] !== undefined) present |= propertyBit(name);
  }
  if (present & P_CONTENT_TYPE) writeString(p.contentType!);
  if (present & P_CONTENT_ENCODING) writeString(p.contentEncoding!);
  if (present & P_HEADERS) writeTable(p.headers!);
  if (present & P_DELIVERY_MODE) writeByte(p.deliveryMode!);
  if (present & P_PRIORITY) writeByte(p.priority!);
  if (present & P_CORRELATION_ID) writeString(p.correlationId!);
  if (present & P_REPLY_TO) writeString(p.replyTo!);
  if (present & P_EXPIRATION) writeString(p.expiration!);
  if (present & P_MESSAGE_ID) writeString(p.messageId!);
  if (present & P_TIMESTAMP) {
    ensure(8);
    pos = buf.writeDoubleLE(p.timestamp!.getTime(), pos);
  }
  if (present & P_TYPE) writeString(p.type!);
  if (present & P_USER_ID) writeString(p.userId!);
  if (present & P_APP_ID) writeString(p.appId!);
  return present;
}

function writeByte(value: number): void {
  ensure(1);
  buf[pos++] = value;
}

// --- decoding -------------------------------------------------------------------------------

// Decoding reads a plain Uint8Array by hand: wrapping each record in a Buffer to use its
// accessors costs more than the accessors save.
let input: Uint8Array = buf;
let at = 0;
let end = 0;

const f64 = new Float64Array(1);
const f64Bytes = new Uint8Array(f64.buffer);
const i64 = new BigInt64Array(f64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function ends(): RangeError {
  return new RangeError('message record ends early');
}

/** Loads the 8 bytes at `at` into the scratch word (as little-endian) and advances. */
function read8(): void {
  if (at + 8 > end) throw ends();
  if (LITTLE_ENDIAN) for (let i = 0; i < 8; i++) f64Bytes[i] = input[at + i]!;
  else for (let i = 0; i < 8; i++) f64Bytes[7 - i] = input[at + i]!;
  at += 8;
}

function readDouble(): number {
  read8();
  return f64[0]!;
}

function readByte(): number {
  if (at >= end) throw ends();
  return input[at++]!;
}

/** Small copies are carved from a shared slab: a typed array of its own costs ~1 µs each. */
const SLAB_BYTES = 32 * 1024;
const SLAB_MAX_COPY = 4 * 1024;
let slab = new ArrayBuffer(SLAB_BYTES);
let slabUsed = 0;

/** A copy of `input[start, stop)` that owns its bytes (they outlive the read buffer). */
function copyBytes(start: number, stop: number): Uint8Array {
  const length = stop - start;
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
  // A plain view, even of a Buffer: Buffer's own subarray costs several times more.
  rememberWindow(input);
  copyInto(bytes, new Uint8Array(windowBuffer, windowOffset + start, length), 0);
  return bytes;
}

function readVarint(): number {
  let n = 0;
  let shift = 0;
  for (;;) {
    if (at >= end) throw ends();
    const b = input[at++]!;
    n += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return n;
    shift += 7;
  }
}

/**
 * Strings of up to {@link CACHED_MAX} bytes are looked up in a small direct-mapped cache of
 * recently decoded ones (exchange and queue names, header names, content types repeat from
 * message to message): comparing a few bytes is cheaper than building a string, and the key
 * strings of decoded header tables are then already interned.
 */
const CACHED_MAX = 32;
const CACHE_SLOTS = 256;
const cacheBytes = new Uint8Array(CACHE_SLOTS * CACHED_MAX);
const cacheLengths = new Int16Array(CACHE_SLOTS).fill(-1);
const cacheStrings: string[] = new Array<string>(CACHE_SLOTS).fill('');
const utf8 = new TextDecoder();

function readString(): string {
  const length = readVarint();
  const start = at;
  const stop = start + length;
  if (stop > end) throw ends();
  at = stop;
  if (length === 0) return '';
  if (length > CACHED_MAX) return decodeUtf8(start, stop);
  const slot = (length * 31 + input[start]! * 7 + input[stop - 1]!) & (CACHE_SLOTS - 1);
  const base = slot * CACHED_MAX;
  if (cacheLengths[slot] === length) {
    let i = 0;
    while (i < length && cacheBytes[base + i] === input[start + i]) i++;
    if (i === length) return cacheStrings[slot]!;
  }
  const s = decodeShort(start, stop);
  for (let i = 0; i < length; i++) cacheBytes[base + i] = input[start + i]!;
  cacheLengths[slot] = length;
  cacheStrings[slot] = s;
  return s;
}

/** A short string: ASCII is rebuilt by hand, cheaper than a call into the UTF-8 decoder. */
function decodeShort(start: number, stop: number): string {
  let s = '';
  for (let i = start; i < stop; i++) {
    const c = input[i]!;
    if (c >= 0x80) return decodeUtf8(start, stop);
    s += String.fromCharCode(c);
  }
  return s;
}

function decodeUtf8(start: number, stop: number): string {
  rememberWindow(input);
  return utf8.decode(new Uint8Array(windowBuffer, windowOffset + start, stop - start));
}

function readTable(): FieldTable {
  const count = readVarint();
  // No inherited keys: a '__proto__' header is a plain key, never the object's prototype.
  const table: Record<string, FieldValue> = emptyTable();
  for (let i = 0; i < count; i++) {
    const key = readString();
    table[key] = readEntry(table, key);
  }
  return table;
}

/** Whether the record being read is in format 2 (`w` values allowed). */
let readingWireTypes = false;

/** A table's or array's value, with the wire type recorded on `container` if it has one. */
function readEntry(container: object, key: string): FieldValue {
  if (!readingWireTypes || at >= end || input[at] !== T_WIRE) return readValue();
  at++;
  const type = readString();
  const value = readValue();
  setWireType(container, key, type);
  return value;
}

function readValue(): FieldValue {
  const tag = readByte();
  switch (tag) {
    case T_STRING:
      return readString();
    case T_INT: {
      if (at + 4 > end) throw ends();
      const b = input;
      const v = b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24);
      at += 4;
      return v;
    }
    case T_DOUBLE:
      return readDouble();
    case T_LONG:
      read8();
      return i64[0]!;
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
      return new Date(readDouble());
    case T_BYTES: {
      const length = readVarint();
      if (at + length > end) throw ends();
      at += length;
      return copyBytes(at - length, at);
    }
    case T_ARRAY: {
      const items: FieldValue[] = new Array(readVarint());
      for (let i = 0; i < items.length; i++) items[i] = readEntry(items, String(i));
      return items;
    }
    case T_TABLE:
      return readTable();
    default:
      throw new RangeError(`unknown header value tag ${String(tag)}`);
  }
}

function decodeFrom(bytes: Uint8Array, offset: number, length: number): StoredMessage {
  return decodeMessage(bytes, offset, length, false);
}

/** `decodeFrom` keeping the body as a view of `bytes`, which the caller never changes. */
function decodeView(bytes: Uint8Array, offset: number, length: number): StoredMessage {
  // The usual record of a stream, no properties and the last record's names, in place.
  const end = offset + length;
  if (length >= 2 && bytes[offset] === 0 && bytes[offset + 1] === 0) {
    const namesEnd = repeatedNamesEnd(bytes, offset + 2, end);
    if (namesEnd > 0) {
      return viewedMessage(bytes, namesEnd, end, EMPTY_PROPERTIES, lastExchange, lastRoutingKey);
    }
  }
  return decodeMessage(bytes, offset, length, true);
}

/**
 * The bytes a decode last read from, with their buffer and offset: reading those two from a view
 * is a generic property load each, `buffer` a call into C++ (see `storage/bytes.ts`), and a
 * reader decodes hundreds of records from one window. This keeps one window alive until the next
 * is decoded from, as the records decoded from it and the cursor reading it do meanwhile.
 */
let lastWindow: Uint8Array = new Uint8Array(0);
let windowBuffer: ArrayBufferLike = lastWindow.buffer;
let windowOffset = 0;

function rememberWindow(bytes: Uint8Array): void {
  if (bytes === lastWindow) return;
  lastWindow = bytes;
  windowBuffer = bytes.buffer;
  windowOffset = bytes.byteOffset;
}

/** A message whose body is a view of `bytes[from, end)`. */
function viewedMessage(
  bytes: Uint8Array,
  from: number,
  end: number,
  properties: Readonly<MessageProperties>,
  exchange: string,
  routingKey: string,
): StoredMessage {
  rememberWindow(bytes);
  return new PackedMessage(
    properties,
    exchange,
    routingKey,
    windowBuffer,
    windowOffset + from,
    end - from,
  );
}

function decodeMessage(
  bytes: Uint8Array,
  offset: number,
  length: number,
  view: boolean,
): StoredMessage {
  input = bytes;
  at = offset;
  end = offset + length;
  try {
    if (length < 2) throw ends();
    const present = bytes[at]! | (bytes[at + 1]! << 8);
    at += 2;
    let exchange: string;
    let routingKey: string;
    const repeated = repeatedNamesEnd(bytes, at, end);
    if (repeated > 0) {
      exchange = lastExchange;
      routingKey = lastRoutingKey;
      at = repeated;
    } else {
      const names = at;
      exchange = readString();
      routingKey = readString();
      rememberNames(bytes, names, at, exchange, routingKey);
    }
    // The two usual cases share one properties object, as publishing does.
    const properties =
      present === 0
        ? EMPTY_PROPERTIES
        : present === P_PRIORITY
          ? priorityOnlyProperties(readByte())
          : readProperties(present);
    if (view) return viewedMessage(bytes, at, end, properties, exchange, routingKey);
    return { exchange, routingKey, properties, body: copyBytes(at, end) };
  } finally {
    input = buf; // the caller's buffer stays referenced only as the remembered window
  }
}

function decode(bytes: Uint8Array): StoredMessage {
  return decodeFrom(bytes, 0, bytes.length);
}

/**
 * The names (exchange and routing key) of the last record decoded, as bytes and as strings. The
 * records of a queue mostly repeat them, and comparing their few bytes in place costs less than
 * a look-up of each in the string cache.
 */
const lastNames = new Uint8Array(64);
let lastNamesLength = -1;
let lastExchange = '';
let lastRoutingKey = '';

/** Where the names at `from` end if their bytes are the last record's (see `lastNames`); else -1. */
function repeatedNamesEnd(bytes: Uint8Array, from: number, end: number): number {
  const length = lastNamesLength;
  if (length < 0 || from + length > end) return -1;
  for (let i = 0; i < length; i++) if (bytes[from + i] !== lastNames[i]) return -1;
  return from + length;
}

/** Keeps the names just read from `bytes[from, to)`, when they are short enough. */
function rememberNames(
  bytes: Uint8Array,
  from: number,
  to: number,
  exchange: string,
  routingKey: string,
): void {
  if (to - from > lastNames.length) return;
  for (let i = from; i < to; i++) lastNames[i - from] = bytes[i]!;
  lastNamesLength = to - from;
  lastExchange = exchange;
  lastRoutingKey = routingKey;
}

function readProperties(present: number): Readonly<MessageProperties> {
  readingWireTypes = (present & P_WIRE_TYPES) !== 0;
  if ((present & ~P_WIRE_TYPES) > P_ALL || (readingWireTypes && (present & P_HEADERS) === 0)) {
    throw new RangeError(`unknown message properties ${present}`);
  }
  const p: MessageProperties = {};
  if (present & P_CONTENT_TYPE) p.contentType = readString();
  if (present & P_CONTENT_ENCODING) p.contentEncoding = readString();
  if (present & P_HEADERS) p.headers = readTable();
  if (present & P_DELIVERY_MODE) p.deliveryMode = readByte();
  if (present & P_PRIORITY) p.priority = readByte();
  if (present & P_CORRELATION_ID) p.correlationId = readString();
  if (present & P_REPLY_TO) p.replyTo = readString();
  if (present & P_EXPIRATION) p.expiration = readString();
  if (present & P_MESSAGE_ID) p.messageId = readString();
  if (present & P_TIMESTAMP) p.timestamp = new Date(readDouble());
  if (present & P_TYPE) p.type = readString();
  if (present & P_USER_ID) p.userId = readString();
  if (present & P_APP_ID) p.appId = readString();
  return p;
}

// --- size -----------------------------------------------------------------------------------

/**
 * The record's accounted size: body, names, string properties and header names and string
 * values, plus a fixed overhead per property and header. It walks one level of headers only,
 * so it stays cheap while tracking what dominates real messages.
 */
function byteLength(message: StoredMessage): number {
  let size = OVERHEAD + message.body.length + message.exchange.length + message.routingKey.length;
  const props = message.properties;
  if (props === EMPTY_PROPERTIES) return size;
  for (const key in props) {
    const value = props[key as keyof MessageProperties];
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
export const messageCodec: RecordCodec<StoredMessage> = {
  byteLength,
  encode,
  encodeInto,
  decode,
  decodeFrom,
  packing: messagePacking,
};

/**
 * {@link messageCodec} reading bodies as views of the adapter's read buffers (`decodeView`), for
 * logs whose readers hold a message briefly, as a stream's consumers do: a message kept long
 * keeps the whole buffer alive, which a queue holding a few messages for a long time should not.
 */
export const messageViewCodec: RecordCodec<StoredMessage> = { ...messageCodec, decodeView };
