/**
 * CRC-32 (IEEE), the checksum of every record and index file. Short ranges (a typical record)
 * are summed in JS with slicing-by-8 tables: calling into zlib costs more than summing a few
 * hundred bytes, and JS needs no view of the range. Long ranges go to zlib's native code.
 */
import { crc32 as zlibCrc32 } from 'node:zlib';

/** Below this many bytes the JS tables beat a call into zlib (measured: ~256 bytes). */
const NATIVE_FROM = 256;

/** `TABLE[k * 256 + b]`: the CRC of byte `b` followed by `k` zero bytes. */
const TABLE = new Int32Array(8 * 256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c;
}
for (let n = 0; n < 256; n++) {
  for (let k = 1; k < 8; k++) {
    const prev = TABLE[(k - 1) * 256 + n]!;
    TABLE[k * 256 + n] = (prev >>> 8) ^ TABLE[prev & 0xff]!;
  }
}

/** CRC-32 of `bytes`, continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  return crc32Range(bytes, 0, bytes.length, crc);
}

/** CRC-32 of `bytes[start, end)` continuing from `crc`; same result as `crc32` on that range. */
export function crc32Range(bytes: Uint8Array, start: number, end: number, crc = 0): number {
  if (end - start >= NATIVE_FROM) {
    return zlibCrc32(new Uint8Array(bytes.buffer, bytes.byteOffset + start, end - start), crc);
  }
  const t = TABLE;
  let c = ~crc;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const a =
      c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    c =
      t[1792 + (a & 0xff)]! ^
      t[1536 + ((a >>> 8) & 0xff)]! ^
      t[1280 + ((a >>> 16) & 0xff)]! ^
      t[1024 + (a >>> 24)]! ^
      t[768 + bytes[i + 4]!]! ^
      t[512 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
  }
  for (; i < end; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** The polynomial, reflected; multiplication modulo it below follows zlib's `crc32_combine`. */
const POLY = 0xedb88320;

/** `a * b` modulo the CRC polynomial (bit 31 is x^0). */
function multModP(a: number, b: number): number {
  if (a === 0) return 0;
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** `X2N[k]` is x^(2^k) modulo the polynomial. */
const X2N = new Uint32Array(32);
X2N[0] = 0x40000000;
for (let k = 1; k < 32; k++) X2N[k] = multModP(X2N[k - 1]!, X2N[k - 1]!);

/**
 * What continuing a CRC-32 from `crc` over `length` bytes adds to their CRC from 0:
 * `crc32(bytes, crc) === (crc32Shift(crc, bytes.length) ^ crc32(bytes)) >>> 0`. So the CRC of
 * a run from many starting states costs one pass over it and a shift per state (at most 32
 * multiplications of 32 steps).
 */
export function crc32Shift(crc: number, length: number): number {
  let power = 0x80000000; // x^0
  let k = 3; // a byte is x^8
  for (let n = length; n > 0; n = Math.floor(n / 2), k++) {
    if (n % 2 === 1) power = multModP(X2N[k & 31]!, power);
  }
  return multModP(power, crc >>> 0);
}
