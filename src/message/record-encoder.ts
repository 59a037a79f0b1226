/**
 * Writes stored messages in the record format of `record-format.ts`: `encodeMessage` into one
 * growable scratch buffer, `encodeMessageInto` straight into the caller's buffer (a log's write
 * buffer).
 */
import { Buffer } from 'node:buffer';
import { copyInto } from '../storage/bytes.js';
import { EMPTY_PROPERTIES } from './normalize.js';
import {
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
import { isWideTimestamp } from './timestamp.js';
import type { FieldTable, FieldValue, MessageProperties, StoredMessage } from './types.js';
import { type WireType, wireTypeFor, wireTypesOf } from './wire-types.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The output of the running encode: the scratch buffer, or the target of `encodeMessageInto`. */
let buf: Buffer = Buffer.allocUnsafe(64 * 1024);
/** The scratch buffer as a plain Uint8Array: `encodeMessage` returns a view of it. */
let bufBytes = plainView(buf);
let pos = 0;
/** Set while `encodeMessageInto` runs: `buf` is the caller's and cannot grow. */
let fixed = false;
/** Thrown by `ensure` when a fixed target is full; `encodeMessageInto` turns it into -1. */
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
      } else if (isWideTimestamp(value)) {
        buf[pos++] = T_SECONDS;
        pos = buf.writeBigInt64LE(value.seconds, pos);
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

/** Encodes a record into the scratch buffer and returns a view of it, valid until the next. */
export function encodeMessage(message: StoredMessage): Uint8Array {
  write(message, 0);
  return bufBytes.subarray(0, pos);
}

/**
 * `encodeMessage` into `target` from `offset`, with no scratch copy. Returns the length, or -1 when the
 * record may not fit (bounds are checked before each field, so a record that would just fit can
 * be refused too). A `Buffer` target is written as is; another Uint8Array costs a Buffer view.
 */
export function encodeMessageInto(
  message: StoredMessage,
  target: Uint8Array,
  offset: number,
): number {
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
    const timestamp = p.timestamp!;
    if (isWideTimestamp(timestamp)) {
      pos = buf.writeBigInt64LE(timestamp.seconds, pos);
      present |= P_TIMESTAMP_SECONDS;
    } else {
      pos = buf.writeDoubleLE(timestamp.getTime(), pos);
    }
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
