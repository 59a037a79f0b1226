/**
 * The frames of one delivery (basic.deliver, its content header, its body frames) written in one
 * pass: the layout is fixed, so nothing goes through the generic method encoder, and the bytes of
 * the strings that repeat (the consumer tag, the exchange, the routing key) are encoded once.
 * A consumer takes each message this way, so this is the server's hottest output.
 */
import { EMPTY_PROPERTIES } from '../../message/normalize.js';
import type { MessageProperties } from '../../message/types.js';
import { copyInto } from '../../storage/bytes.js';
import { Writer } from './bytes.js';
import { FRAME_BODY, FRAME_END, FRAME_HEADER, FRAME_METHOD, FRAME_OVERHEAD } from './methods.js';
import { writeContentHeader, writePropertyList } from './properties.js';

/** A short string's wire bytes: its length octet, then its UTF-8. */
export function shortstrBytes(value: string): Buffer {
  const n = Buffer.byteLength(value);
  if (n > 255) throw new RangeError(`short string of ${n} bytes is longer than 255`);
  const bytes = Buffer.allocUnsafe(1 + n);
  bytes[0] = n;
  bytes.write(value, 1, 'utf8');
  return bytes;
}

/**
 * The wire bytes of the short strings a channel writes again and again (exchange and routing
 * key names), the last one of each kept: a run of deliveries from one queue names the same ones.
 */
export class ShortstrCache {
  #value = '';
  #bytes: Buffer = shortstrBytes('');

  bytes(value: string): Buffer {
    if (value !== this.#value) {
      this.#bytes = shortstrBytes(value);
      this.#value = value;
    }
    return this.#bytes;
  }
}

/**
 * The encoded property list (flags and values) of the properties a channel delivers again and
 * again: a queue's neighbouring messages share one properties object, so a run of deliveries
 * encodes it once. Kept once one object is seen twice in a row, so that a delivery whose
 * properties are its own (a header added per delivery) costs no copy.
 */
export class PropertiesCache {
  #seen: Readonly<MessageProperties> | undefined;
  #cached: Readonly<MessageProperties> | undefined;
  #bytes: Buffer | undefined;

  /** The property list's bytes, or undefined when `properties` is not worth keeping yet. */
  bytes(properties: Readonly<MessageProperties>): Buffer | undefined {
    if (properties === this.#cached) return this.#bytes;
    if (properties !== this.#seen) {
      this.#seen = properties;
      return undefined;
    }
    const w = new Writer(64);
    writePropertyList(w, properties);
    this.#bytes = w.buf.subarray(0, w.pos);
    this.#cached = properties;
    return this.#bytes;
  }
}

/** The property list of a message without properties: no flags set. */
const NO_PROPERTIES = Buffer.alloc(2);

/** Largest method frame of a basic.deliver: three short strings and 14 bytes of fixed fields. */
const METHOD_MAX = 7 + 4 + 3 * 256 + 8 + 1 + 1;

function u32(buf: Buffer, at: number, v: number): void {
  buf[at] = v >>> 24;
  buf[at + 1] = v >>> 16;
  buf[at + 2] = v >>> 8;
  buf[at + 3] = v;
}

/** Writes a frame's type, channel and size; returns where its payload starts. */
function frameStart(buf: Buffer, at: number, type: number, channel: number, size: number): number {
  buf[at] = type;
  buf[at + 1] = channel >>> 8;
  buf[at + 2] = channel;
  u32(buf, at + 3, size);
  return at + 7;
}

/** An unsigned 64-bit number up to 2^53 (delivery tags, body sizes). */
function u64(buf: Buffer, at: number, v: number): void {
  u32(buf, at, Math.floor(v / 2 ** 32));
  u32(buf, at + 4, v >>> 0);
}

function bytesAt(buf: Buffer, at: number, bytes: Uint8Array): number {
  copyInto(buf, bytes, at);
  return at + bytes.length;
}

/**
 * Appends a basic.deliver and its content. The short strings come as wire bytes
 * ({@link shortstrBytes}).
 */
export function writeDelivery(
  w: Writer,
  channel: number,
  consumerTag: Uint8Array,
  deliveryTag: number,
  redelivered: boolean,
  exchange: Uint8Array,
  routingKey: Uint8Array,
  properties: Readonly<MessageProperties>,
  body: Uint8Array,
  frameMax: number,
  cache: PropertiesCache,
): void {
  const size = body.length;
  const chunk = frameMax - FRAME_OVERHEAD;
  // The method frame, the header frame without properties, and the body frames.
  w.ensure(METHOD_MAX + 22 + size + Math.ceil(size / chunk) * FRAME_OVERHEAD);
  const buf = w.buf;
  let at = w.pos;
  const methodSize = 4 + consumerTag.length + 9 + exchange.length + routingKey.length;
  at = frameStart(buf, at, FRAME_METHOD, channel, methodSize);
  u32(buf, at, (60 << 16) | 60);
  at = bytesAt(buf, at + 4, consumerTag);
  u64(buf, at, deliveryTag);
  buf[at + 8] = redelivered ? 1 : 0;
  at = bytesAt(buf, at + 9, exchange);
  at = bytesAt(buf, at, routingKey);
  buf[at++] = FRAME_END;
  const list = properties === EMPTY_PROPERTIES ? NO_PROPERTIES : cache.bytes(properties);
  if (list !== undefined) {
    at = frameStart(buf, at, FRAME_HEADER, channel, 12 + list.length);
    u32(buf, at, 60 << 16);
    u64(buf, at + 4, size);
    w.pos = at + 12;
    w.ensure(list.length + 1 + size + Math.ceil(size / chunk) * FRAME_OVERHEAD);
    at = bytesAt(w.buf, w.pos, list);
    w.buf[at] = FRAME_END;
    w.pos = at + 1;
  } else {
    const start = frameStart(buf, at, FRAME_HEADER, channel, 0);
    w.pos = start;
    writeContentHeader(w, size, properties);
    u32(w.buf, start - 4, w.pos - start);
    // Room for the body frames, whatever the properties took.
    w.ensure(1 + size + Math.ceil(size / chunk) * FRAME_OVERHEAD);
    w.buf[w.pos++] = FRAME_END;
  }
  const out = w.buf;
  at = w.pos;
  for (let from = 0; from < size; from += chunk) {
    const to = Math.min(size, from + chunk);
    at = frameStart(out, at, FRAME_BODY, channel, to - from);
    at = bytesAt(out, at, from === 0 && to === size ? body : body.subarray(from, to));
    out[at++] = FRAME_END;
  }
  w.pos = at;
}
