import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ExpiryIndex } from '../../../src/queues/classic/expiry-index.js';

/** Pops every entry, returning the handles in the order they came out. */
function popAll(index: ExpiryIndex): number[] {
  const out: number[] = [];
  while (index.size > 0) {
    out.push(index.nextHandle);
    index.pop();
  }
  return out;
}

describe('the expiry index', () => {
  test('entries due at the same time come out in queue order, whatever order they were pushed in', () => {
    const index = new ExpiryIndex();
    for (const handle of [0, 4, 3, 2, 1]) index.push(1000, handle);
    expect(popAll(index)).toEqual([0, 1, 2, 3, 4]);
  });

  test('queue order is the rank the queue gives, not the handle', () => {
    const index = new ExpiryIndex((handle) => -handle);
    for (const handle of [1, 2, 3]) index.push(5, handle);
    expect(popAll(index)).toEqual([3, 2, 1]);
  });

  test('pops by time, then by rank, under any pushes, pops and compactions', () => {
    const op = fc.oneof(
      fc.record({ push: fc.tuple(fc.integer({ min: 0, max: 5 }), fc.nat(50)) }),
      fc.record({ pop: fc.constant(true) }),
      fc.record({ compact: fc.nat(3) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const index = new ExpiryIndex((handle) => handle, 2);
        let model: [number, number][] = [];
        const order = (a: [number, number], b: [number, number]) => a[0] - b[0] || a[1] - b[1];
        for (const o of ops) {
          if ('push' in o) {
            index.push(o.push[0], o.push[1]);
            model.push(o.push);
          } else if ('pop' in o) {
            model.sort(order);
            const first = model.shift();
            if (first === undefined) continue;
            expect([index.nextAt, index.nextHandle]).toEqual(first);
            index.pop();
          } else {
            index.compact((handle) => handle % 4 !== o.compact);
            model = model.filter(([, handle]) => handle % 4 !== o.compact);
          }
          expect(index.size).toBe(model.length);
        }
        const rest = [...model].sort(order).map(([, handle]) => handle);
        expect(popAll(index)).toEqual(rest);
      }),
      { numRuns: 300 },
    );
  });
});
