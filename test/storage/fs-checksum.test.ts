import { crc32 as zlibCrc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32, crc32Range } from '../../src/storage/fs/checksum.js';

describe('record checksums', () => {
  const bytes = Uint8Array.from({ length: 1200 }, (_, i) => (i * 2654435761) >>> 24);

  it('equal zlib CRC-32 for every length on both sides of the native threshold', () => {
    for (let length = 0; length <= 600; length++) {
      for (const start of [0, 1, 3, 7]) {
        const range = bytes.subarray(start, start + length);
        expect(crc32Range(bytes, start, start + length), `${start}+${length}`).toBe(
          zlibCrc32(range),
        );
      }
    }
  });

  it('continue from a previous checksum as if the ranges were one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1200 }),
        fc.integer({ min: 0, max: 1200 }),
        fc.integer({ min: 0, max: 1200 }),
        (a, b, c) => {
          const [from, middle, to] = [a, b, c].sort((x, y) => x - y) as [number, number, number];
          const first = crc32Range(bytes, from, middle);
          expect(crc32Range(bytes, middle, to, first)).toBe(crc32Range(bytes, from, to));
        },
      ),
    );
    expect(crc32(bytes.subarray(10, 20), crc32(bytes.subarray(0, 10)))).toBe(
      crc32(bytes.subarray(0, 20)),
    );
  });

  it('read a Buffer and a view into a shared buffer alike', () => {
    const buffer = Buffer.from(bytes.buffer, 100, 300);
    expect(crc32(buffer)).toBe(zlibCrc32(bytes.subarray(100, 400)));
    expect(crc32Range(buffer, 5, 55)).toBe(zlibCrc32(bytes.subarray(105, 155)));
  });
});
