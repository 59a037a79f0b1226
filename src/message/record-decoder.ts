/**
 * Reads stored messages in the record format of `record-format.ts`: `decodeMessage` and
 * `decodeMessageFrom` copy the body out of the caller's bytes; `decodeMessageView`, for bytes an
 * adapter never reuses, keeps it as a view of them (a `PackedMessage`, which makes the view when
 * the body is first read). An unknown property bit or value tag is refused (a `RangeError`,
 * reported by the log as corruption), never skipped; so is a `w` value in a format 1 record.
 */
import { copyInto } from '../storage/bytes.js';
import { emptyTable } from '../table.js';
import { EMPTY_PROPERTIES, priorityOnlyProperties } from './normalize.js';
import { PackedMessage } from './packed-message.js';
import {
  P_ALL,
  P_APP_ID,
  P_CONTENT_ENCODING,
  P_CONTENT_TYPE,
  P_CORRELATION_ID,
  P_DELIVERY_MODE,
  P_EXPIRATION,
  P_HEADERS,
  P_MESSAGE_ID,
  P_PRIORITY,
  P_REPLY_TO,
  P_TIMESTAMP,
  P_TIMESTAMP_SECONDS,
  P_TYPE,
  P_USER_ID,
  P_WIRE_TYPES,
  T_ARRAY,
  T_BIGINT,
  T_BYTES,
  T_DATE,
  T_DOUBLE,
  T_FALSE,
  T_INT,
  T_LONG,
  T_NULL,
  T_SECONDS,
  T_STRING,
  T_TABLE,
  T_TRUE,
  T_UNDEFINED,
  T_WIRE,
} from './record-format.js';
import { AmqpTimestamp } from './timestamp.js';
import type { FieldTable, FieldValue, MessageProperties, StoredMessage } from './types.js';
import { setWireType } from './wire-types.js';

/** What `input` holds between decodes: no caller's bytes. */
const NO_INPUT = new Uint8Array(0);

// Decoding reads a plain Uint8Array by hand: wrapping each record in a Buffer to use its
// accessors costs more than the accessors save.
let input: Uint8Array = NO_INPUT;
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
    case T_SECONDS:
      read8();
      return new AmqpTimestamp(i64[0]!);
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

/** Decodes the record at `bytes[offset, offset + length)`, copying its body out. */
export function decodeMessageFrom(
  bytes: Uint8Array,
  offset: number,
  length: number,
): StoredMessage {
  return decodeRecord(bytes, offset, length, false);
}

/** `decodeMessageFrom` keeping the body as a view of `bytes`, which the caller never changes. */
export function decodeMessageView(
  bytes: Uint8Array,
  offset: number,
  length: number,
): StoredMessage {
  // The usual record of a stream, no properties and the last record's names, in place.
  const end = offset + length;
  if (length >= 2 && bytes[offset] === 0 && bytes[offset + 1] === 0) {
    const namesEnd = repeatedNamesEnd(bytes, offset + 2, end);
    if (namesEnd > 0) {
      return viewedMessage(bytes, namesEnd, end, EMPTY_PROPERTIES, lastExchange, lastRoutingKey);
    }
  }
  return decodeRecord(bytes, offset, length, true);
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

function decodeRecord(
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
    input = NO_INPUT; // the caller's buffer stays referenced only as the remembered window
  }
}

/** Decodes a record that fills `bytes`, copying its body out. */
export function decodeMessage(bytes: Uint8Array): StoredMessage {
  return decodeMessageFrom(bytes, 0, bytes.length);
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
  const seconds = (present & P_TIMESTAMP_SECONDS) !== 0;
  if (
    (present & ~(P_WIRE_TYPES | P_TIMESTAMP_SECONDS)) > P_ALL ||
    (readingWireTypes && (present & P_HEADERS) === 0) ||
    (seconds && (present & P_TIMESTAMP) === 0)
  ) {
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
  if (present & P_TIMESTAMP) {
    if (seconds) {
      read8();
      p.timestamp = new AmqpTimestamp(i64[0]!);
    } else {
      p.timestamp = new Date(readDouble());
    }
  }
  if (present & P_TYPE) p.type = readString();
  if (present & P_USER_ID) p.userId = readString();
  if (present & P_APP_ID) p.appId = readString();
  return p;
}
