import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../src/errors.js';
import { Deduplicator, deduplicationOptions } from '../../src/exchanges/deduplication.js';
import type { FieldTable } from '../../src/message/types.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

function deduplicator(args: FieldTable, clock = new ManualClock(0)) {
  const options = deduplicationOptions({ 'x-message-deduplication': true, ...args });
  if (!options) throw new Error('not enabled');
  return new Deduplicator(options, clock);
}

const id = (value: string | number) => ({ 'x-deduplication-header': value });

describe('deduplication cache', () => {
  it('drops a message whose id it has seen, and counts it', () => {
    const d = deduplicator({});
    expect(d.isDuplicate(id('a'))).toBe(false);
    expect(d.isDuplicate(id('a'))).toBe(true);
    expect(d.isDuplicate(id('b'))).toBe(false);
    expect(d.dropped).toBe(1);
  });

  it('never drops a message without the header', () => {
    const d = deduplicator({});
    expect(d.isDuplicate(undefined)).toBe(false);
    expect(d.isDuplicate({})).toBe(false);
    expect(d.isDuplicate({})).toBe(false);
  });

  it('tells ids of different types apart (1 is not "1")', () => {
    const d = deduplicator({});
    expect(d.isDuplicate(id(1))).toBe(false);
    expect(d.isDuplicate(id('1'))).toBe(false);
    expect(d.isDuplicate(id(1))).toBe(true);
  });

  it('holds x-cache-size ids (default 128), forgetting the oldest first', () => {
    const d = deduplicator({ 'x-cache-size': 2 });
    for (const v of ['a', 'b', 'c']) d.isDuplicate(id(v));
    expect(d.isDuplicate(id('a'))).toBe(false); // evicted, seen again: now c, a
    expect(d.isDuplicate(id('c'))).toBe(true);
    const byDefault = deduplicator({});
    for (let i = 0; i <= 128; i++) byDefault.isDuplicate(id(i));
    expect(byDefault.isDuplicate(id(128))).toBe(true);
    expect(byDefault.isDuplicate(id(0))).toBe(false);
  });

  it('forgets an id after x-cache-ttl ms of the clock, or the message’s own x-cache-ttl', () => {
    const clock = new ManualClock(0);
    const d = deduplicator({ 'x-cache-ttl': 1000 }, clock);
    d.isDuplicate(id('a'));
    d.isDuplicate({ ...id('b'), 'x-cache-ttl': 5000 });
    clock.advance(999);
    expect(d.isDuplicate(id('a'))).toBe(true);
    clock.advance(1);
    expect(d.isDuplicate(id('a'))).toBe(false);
    expect(d.isDuplicate(id('b'))).toBe(true);
    clock.advance(4000);
    expect(d.isDuplicate(id('b'))).toBe(false);
  });

  it('reads the id from the header x-deduplication-header names', () => {
    const d = deduplicator({ 'x-deduplication-header': 'order-id' });
    expect(d.isDuplicate({ 'order-id': 'o1' })).toBe(false);
    expect(d.isDuplicate({ 'order-id': 'o1' })).toBe(true);
    expect(d.isDuplicate(id('o1'))).toBe(false);
  });

  it('is off unless x-message-deduplication is true', () => {
    expect(deduplicationOptions({})).toBeUndefined();
    expect(deduplicationOptions({ 'x-message-deduplication': false })).toBeUndefined();
    expect(deduplicationOptions({ 'x-message-deduplication': true })).toEqual({
      cacheSize: 128,
      header: 'x-deduplication-header',
    });
  });

  it('refuses invalid arguments with LavinMQ’s wording', () => {
    const check = (args: FieldTable) => () => deduplicationOptions(args);
    expect(check({ 'x-message-deduplication': 'yes' })).toThrow(
      new PreconditionFailedError('x-message-deduplication header not a boolean'),
    );
    expect(check({ 'x-cache-size': 'big' })).toThrow(
      new PreconditionFailedError('x-cache-size header not an integer'),
    );
    expect(check({ 'x-cache-ttl': -1 })).toThrow(
      new PreconditionFailedError('x-cache-ttl header less than minimum value 0'),
    );
    expect(check({ 'x-deduplication-header': 5 })).toThrow(
      new PreconditionFailedError('x-deduplication-header header not a string'),
    );
  });

  it('reads no argument or header from an object prototype', () => {
    const d = deduplicator({});
    expect(d.isDuplicate({ toString: 'x' } as FieldTable)).toBe(false);
    expect(deduplicationOptions({ constructor: 1 } as FieldTable)).toBeUndefined();
  });
});
