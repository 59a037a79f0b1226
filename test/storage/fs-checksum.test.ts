import { crc32 as zlibCrc32 } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32, crc32Range } from '../../src/storage/fs/checksum.js';
import { checkChunks, checkRun, endChunk, SEGMENT_LAYOUT } from '../../src/storage/fs/frame.js';

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

describe('chunk checksums (segment layout 2)', () => {
  /** Frames of the given record lengths as one chunk, its checksum in its last four bytes. */
  function chunk(lengths: number[], seed: number): Uint8Array {
    const frames = lengths.map((length) => 24 + length + 4);
    const bytes = new Uint8Array(frames.reduce((a, b) => a + b, 0));
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761 + seed) >>> 24;
    const view = new DataView(bytes.buffer);
    let at = 0;
    for (const [i, length] of lengths.entries()) {
      view.setUint32(at, length + 4, true);
      view.setUint32(at + 8, i === lengths.length - 1 ? 0x80000000 | i : i, true);
      view.setUint32(at + 24 + length, 0, true);
      at += 24 + length + 4;
    }
    endChunk(bytes, 0, at - frames.at(-1)!, at);
    return bytes;
  }
  const lengthLists = fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 12 });

  it('check a chunk, and any run of whole chunks, with one pass', () => {
    fc.assert(
      fc.property(fc.array(lengthLists, { minLength: 1, maxLength: 5 }), (lists) => {
        const chunks = lists.map((lengths, i) => chunk(lengths, i));
        const run = Buffer.concat(chunks);
        expect(checkChunks(run, 0, run.length)).toBe(true);
        let at = 0;
        for (const c of chunks) {
          expect(checkRun(SEGMENT_LAYOUT, run, at, run.length, run.length)).toBe(c.length);
          at += c.length;
        }
      }),
    );
  });

  it('fail a run with any one bit of any chunk flipped', () => {
    fc.assert(
      fc.property(
        fc.array(lengthLists, { minLength: 1, maxLength: 3 }),
        fc.nat(),
        fc.integer({ min: 0, max: 7 }),
        (lists, where, bit) => {
          const run = Buffer.concat(lists.map((lengths, i) => chunk(lengths, i)));
          const at = where % run.length;
          run[at] = run[at]! ^ (1 << bit);
          expect(checkChunks(run, 0, run.length)).toBe(false);
        },
      ),
    );
  });
});
