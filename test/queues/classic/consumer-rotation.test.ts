import { describe, expect, it } from 'vitest';
import { ConsumerRotation } from '../../../src/queues/classic/consumer-rotation.js';
import type { Subscription } from '../../../src/queues/consumer.js';

/** A stand-in consumer whose room the test sets. */
function consumer(name: string, capacity = 1) {
  return { name, capacity } as unknown as Subscription<number> & { name: string; capacity: number };
}

describe('ConsumerRotation', () => {
  it('serves the front consumer with room and sends it to the back', () => {
    const rotation = new ConsumerRotation<number>();
    const [a, b, c] = [consumer('a', 9), consumer('b', 9), consumer('c', 9)];
    for (const x of [a, b, c]) rotation.add(x, 0);
    expect([1, 2, 3, 4].map(() => (rotation.next() as typeof a).name)).toEqual([
      'a',
      'b',
      'c',
      'a',
    ]);
  });

  it('steps a full consumer out on its turn; it rejoins at the back once freed', () => {
    const rotation = new ConsumerRotation<number>();
    const [a, b, c] = [consumer('a', 0), consumer('b', 0), consumer('c', 9)];
    for (const x of [a, b, c]) rotation.add(x, 0);
    expect(rotation.next()).toBe(c);
    b.capacity = 1;
    rotation.freed(b);
    a.capacity = 1;
    rotation.freed(a);
    expect([rotation.next(), rotation.next(), rotation.next()]).toEqual([c, b, a]);
  });

  it('serves higher priorities first and forgets removed consumers', () => {
    const rotation = new ConsumerRotation<number>();
    const [low, high] = [consumer('low', 9), consumer('high', 9)];
    rotation.add(low, 0);
    rotation.add(high, 5);
    expect(rotation.next()).toBe(high);
    rotation.remove(high);
    rotation.freed(high);
    expect(rotation.next()).toBe(low);
    rotation.remove(low);
    expect(rotation.next()).toBeUndefined();
  });
});
