import { describe, expect, it } from 'vitest';
import { copyInto } from '../../src/storage/bytes.js';

describe('copyInto', () => {
  it('copies every byte of the source at the offset and leaves the rest alone', () => {
    const target = new Uint8Array(8).fill(9);
    copyInto(target, Uint8Array.of(1, 2, 3), 4);
    expect([...target]).toEqual([9, 9, 9, 9, 1, 2, 3, 9]);
  });

  it('copies into a Buffer and from a view into a shared buffer', () => {
    const shared = Uint8Array.of(0, 5, 6, 7, 0);
    const target = Buffer.alloc(4);
    copyInto(target, shared.subarray(1, 4), 1);
    expect([...target]).toEqual([0, 5, 6, 7]);
  });

  it('throws a RangeError and writes nothing when the source does not fit', () => {
    const target = new Uint8Array(4);
    expect(() => copyInto(target, Uint8Array.of(1, 2, 3), 2)).toThrow(RangeError);
    expect([...target]).toEqual([0, 0, 0, 0]);
  });
});
