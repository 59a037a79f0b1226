import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../src/errors.js';
import {
  didYouMean,
  nearestName,
  refuseUnknownArguments,
  refuseUnknownKeys,
} from '../../src/queues/unknown-names.js';

describe('unknown names', () => {
  it('finds the nearest known name within a typo', () => {
    const known = ['tag', 'noAck', 'prefetch', 'manualAck'];
    expect(nearestName('prefech', known)).toBe('prefetch');
    expect(nearestName('noack', known)).toBe('noAck');
    expect(nearestName('manual_ack', known)).toBe('manualAck');
    expect(nearestName('banana', known)).toBeUndefined();
    expect(didYouMean('x-max-lenght', ['x-max-length', 'x-max-length-bytes'])).toBe(
      " (did you mean 'x-max-length'?)",
    );
    expect(didYouMean('zzz', ['x-max-length'])).toBe('');
  });

  it('refuses an unknown key with a TypeError, an unknown argument with 406', () => {
    expect(() =>
      refuseUnknownKeys({ prefech: 1 }, new Set(['prefetch']), 'subscribe parameter'),
    ).toThrow(new TypeError("unknown subscribe parameter 'prefech' (did you mean 'prefetch'?)"));
    expect(() => refuseUnknownKeys({ prefetch: 1 }, new Set(['prefetch']), 'x')).not.toThrow();
    const refuse = () =>
      refuseUnknownArguments({ 'x-max-lenght': 1 }, ['x-max-length'], 'argument', 'jobs', 'orders');
    expect(refuse).toThrow(PreconditionFailedError);
    expect(refuse).toThrow(
      "PRECONDITION_FAILED - unknown argument 'x-max-lenght' for queue 'jobs' in vhost 'orders' (did you mean 'x-max-length'?)",
    );
    // An argument left undefined is no argument, as everywhere else.
    expect(() =>
      refuseUnknownArguments({ 'x-nope': undefined }, [], 'argument', 'q', '/'),
    ).not.toThrow();
  });
});
