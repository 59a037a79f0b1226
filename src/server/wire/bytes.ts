/**
 * Reading and writing AMQP's primitive types. A reader that runs past its end throws
 * `WireSyntaxError`, which the connection answers with 501 FRAME_ERROR, as RabbitMQ does.
 */
import { Buffer } from 'node:buffer';
import { AmqpTimestamp, MAX_DATE_SECONDS, timestampSeconds } from '../../message/timestamp.js';

/** A frame's payload did not decode: AMQP 501 FRAME_ERROR (`cannot decode`), as on RabbitMQ. */
export class WireSyntaxError extends Error {
  override name = 'WireSyntaxError';
}

/** Reads primitives from one frame payload. */
export class Reader {
  pos: number;
  readonly end: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
    end = buf.length,
  ) {
    this.pos = start;
    this.end = end;
  }

  #need(n: number): number {
    const at = this.pos;
    if (at + n > this.end) throw new WireSyntaxError('frame payload ends inside a field');
    this.pos = at + n;
    return at;
  }

  get remaining(): number {
    return this.end - this.pos;
  }
  u8(): number {
    return this.buf[this.#need(1)]!;
  }
  i8(): number {
    return this.buf.readInt8(this.#need(1));
  }
  u16(): number {
    return this.buf.readUInt16BE(this.#need(2));
  }
  i16(): number {
    return this.buf.readInt16BE(this.#need(2));
  }
  u32(): number {
    return this.buf.readUInt32BE(this.#need(4));
  }
  i32(): number {
    return this.buf.readInt32BE(this.#need(4));
  }
  i64(): bigint {
    return this.buf.readBigInt64BE(this.#need(8));
  }
  u64(): bigint {
    return this.buf.readBigUInt64BE(this.#need(8));
  }
  /**
   * An unsigned 64-bit number as a JS number, exact up to 2^53: delivery tags, body sizes and
   * timestamps, without the BigInt allocation of `u64()`.
   */
  u64Number(): number {
    const at = this.#need(8);
    return this.buf.readUInt32BE(at) * 2 ** 32 + this.buf.readUInt32BE(at + 4);
  }
  /** An AMQP timestamp: a `Date`, an `AmqpTimestamp` beyond one (see message/timestamp.ts). */
  timestamp(): Date {
    const at = this.#need(8);
    // Exact as a number while a Date holds it (far below 2^53); beyond, the bits as a bigint.
    const seconds = this.buf.readInt32BE(at) * 2 ** 32 + this.buf.readUInt32BE(at + 4);
    if (Math.abs(seconds) <= MAX_DATE_SECONDS) return new Date(seconds * 1000);
    return new AmqpTimestamp(this.buf.readBigInt64BE(at));
  }
  f32(): number {
    return this.buf.readFloatBE(this.#need(4));
  }
  f64(): number {
    return this.buf.readDoubleBE(this.#need(8));
  }
  bytes(n: number): Buffer {
    const at = this.#need(n);
    return this.buf.subarray(at, at + n);
  }
  shortstr(): string {
    const n = this.u8();
    const at = this.#need(n);
    return this.buf.toString('utf8', at, at + n);
  }
  longstr(): Buffer {
    return Buffer.from(this.bytes(this.u32()));
  }
}

/** A growable output buffer of primitives. */
export class Writer {
  buf: Buffer;
  pos = 0;
  constructor(size = 4096) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }
  i8(v: number): void {
    this.ensure(1);
    this.pos = this.buf.writeInt8(v, this.pos);
  }
  u16(v: number): void {
    this.ensure(2);
    this.pos = this.buf.writeUInt16BE(v, this.pos);
  }
  i16(v: number): void {
    this.ensure(2);
    this.pos = this.buf.writeInt16BE(v, this.pos);
  }
  u32(v: number): void {
    this.ensure(4);
    this.pos = this.buf.writeUInt32BE(v, this.pos);
  }
  i32(v: number): void {
    this.ensure(4);
    this.pos = this.buf.writeInt32BE(v, this.pos);
  }
  i64(v: bigint): void {
    this.ensure(8);
    this.pos = this.buf.writeBigInt64BE(v, this.pos);
  }
  u64(v: bigint): void {
    this.ensure(8);
    this.pos = this.buf.writeBigUInt64BE(v, this.pos);
  }
  /** A non-negative integer up to 2^53 as an unsigned 64-bit number (see `Reader.u64Number`). */
  u64Number(v: number): void {
    this.ensure(8);
    this.buf.writeUInt32BE(Math.floor(v / 2 ** 32), this.pos);
    this.pos = this.buf.writeUInt32BE(v >>> 0, this.pos + 4);
  }
  /** An AMQP timestamp: a `Date`'s whole seconds (an `AmqpTimestamp`'s), in 64 bits. */
  timestamp(v: Date): void {
    this.ensure(8);
    const seconds = Math.floor(v.getTime() / 1000);
    if (!Number.isFinite(seconds)) {
      this.pos = this.buf.writeBigInt64BE(timestampSeconds(v), this.pos);
      return;
    }
    const high = Math.floor(seconds / 2 ** 32);
    this.buf.writeInt32BE(high, this.pos);
    this.pos = this.buf.writeUInt32BE(seconds - high * 2 ** 32, this.pos + 4);
  }
  f32(v: number): void {
    this.ensure(4);
    this.pos = this.buf.writeFloatBE(v, this.pos);
  }
  f64(v: number): void {
    this.ensure(8);
    this.pos = this.buf.writeDoubleBE(v, this.pos);
  }
  bytes(v: Uint8Array): void {
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
  }
  shortstr(v: string): void {
    const n = Buffer.byteLength(v);
    if (n > 255) throw new RangeError(`short string of ${n} bytes is longer than 255`);
    this.ensure(1 + n);
    this.buf[this.pos++] = n;
    this.pos += this.buf.write(v, this.pos, 'utf8');
  }
  longstr(v: string | Uint8Array): void {
    if (typeof v === 'string') {
      const n = Buffer.byteLength(v);
      this.ensure(4 + n);
      this.u32(n);
      this.pos += this.buf.write(v, this.pos, 'utf8');
    } else {
      this.u32(v.length);
      this.bytes(v);
    }
  }
  /** A copy of what was written. */
  take(): Buffer {
    // One native copy (`Buffer.from` of a view goes through the generic array-like path).
    const bytes = Buffer.allocUnsafe(this.pos);
    this.buf.copy(bytes, 0, 0, this.pos);
    return bytes;
  }
}
