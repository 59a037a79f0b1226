/**
 * CRC-32 (IEEE), the checksum of every record and index file. Payloads go through zlib's native
 * implementation; the few header bytes of a frame are folded in by a table in JS, which costs
 * less than creating the view zlib would need.
 */
import { crc32 as zlibCrc32 } from 'node:zlib';

/** CRC-32 of `bytes`, continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  return zlibCrc32(bytes, crc);
}

const TABLE = new Int32Array(256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  TABLE[n] = c;
}

/** CRC-32 of `buf[start, end)` continuing from `crc`; same result as `crc32` on that range. */
export function crc32Range(buf: Uint8Array, start: number, end: number, crc = 0): number {
  let c = ~crc;
  for (let i = start; i < end; i++) c = TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
