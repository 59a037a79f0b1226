import fc from 'fast-check';
import { expect, test } from 'vitest';
import { DeliveryWindow } from '../../src/queues/delivery-window.js';

test('deliveries settle in any order and unknown or settled tags are not found', () => {
  const window = new DeliveryWindow<string>();
  for (let tag = 1; tag <= 5; tag++) window.add(tag, `m${tag}`);
  expect(window.take(3)).toBe('m3');
  expect(window.take(3)).toBeUndefined();
  expect(window.take(9)).toBeUndefined();
  expect(window.take(1)).toBe('m1');
  expect(window.size).toBe(3);
  const taken: string[] = [];
  expect(window.takeUpTo(4, (e) => taken.push(e))).toBe(2);
  expect(taken).toEqual(['m2', 'm4']);
  expect(window.has(5)).toBe(true);
  expect(window.size).toBe(1);
});

test('one delivery held while many newer ones settle keeps the window small', () => {
  const window = new DeliveryWindow<number>();
  window.add(1, 1);
  for (let tag = 2; tag < 100_000; tag++) {
    window.add(tag, tag);
    window.take(tag);
  }
  expect(window.size).toBe(1);
  expect(window.take(1)).toBe(1);
  expect(window.size).toBe(0);
});

test('the window agrees with a map under random adds and settles', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.constant({ op: 'add' as const }),
          fc.record({ op: fc.constant('take' as const), pick: fc.nat(200) }),
          fc.record({ op: fc.constant('upTo' as const), pick: fc.nat(200) }),
        ),
        { maxLength: 300 },
      ),
      (ops) => {
        const window = new DeliveryWindow<number>();
        const model = new Map<number, number>();
        let next = 1;
        for (const step of ops) {
          if (step.op === 'add') {
            window.add(next, next * 10);
            model.set(next, next * 10);
            next++;
          } else if (step.op === 'take') {
            const tag = step.pick % (next + 1);
            expect(window.take(tag)).toBe(model.get(tag));
            model.delete(tag);
          } else {
            const limit = step.pick % (next + 1);
            const expected = [...model.keys()].filter((t) => t <= limit).sort((a, b) => a - b);
            const seen: number[] = [];
            window.takeUpTo(limit, (e) => seen.push(e));
            expect(seen).toEqual(expected.map((t) => t * 10));
            for (const t of expected) model.delete(t);
          }
          expect(window.size).toBe(model.size);
        }
      },
    ),
  );
});
