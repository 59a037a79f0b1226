import { expect, test } from 'vitest';
import { ManualClock } from '../../src/testing/manual-clock.js';

test('a manual clock fires due timers in order as time advances', () => {
  const clock = new ManualClock(1000);
  const fired: string[] = [];
  clock.setTimeout(() => fired.push(`b@${clock.now()}`), 20);
  clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
  clock.setTimeout(() => fired.push(`c@${clock.now()}`), 20);
  const cancelled = clock.setTimeout(() => fired.push('never'), 15);
  clock.clearTimeout(cancelled);
  clock.advance(15);
  expect(fired).toEqual(['a@1010']);
  clock.advance(100);
  expect(fired).toEqual(['a@1010', 'b@1020', 'c@1020']);
  expect(clock.now()).toBe(1115);
  expect(clock.pendingTimers).toBe(0);
});

test('timers scheduled by a firing timer fire in the same advance when due', () => {
  const clock = new ManualClock(0);
  const fired: number[] = [];
  clock.setTimeout(() => {
    fired.push(clock.now());
    clock.setTimeout(() => fired.push(clock.now()), 5);
  }, 5);
  clock.advance(10);
  expect(fired).toEqual([5, 10]);
});

test('a manual clock never goes backwards', () => {
  const clock = new ManualClock(100);
  expect(() => clock.setTime(50)).toThrow(RangeError);
  expect(() => clock.advance(-1)).toThrow(RangeError);
});
