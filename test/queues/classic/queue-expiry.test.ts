import { describe, expect, it } from 'vitest';
import { QueueExpiry } from '../../../src/queues/classic/queue-expiry.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';

function countdown() {
  const clock = new ManualClock();
  let expired = 0;
  const expiry = new QueueExpiry(clock, () => expired++);
  return { clock, expiry, expired: () => expired };
}

describe('QueueExpiry', () => {
  it('runs out once the whole countdown passes', () => {
    const { clock, expiry, expired } = countdown();
    expiry.restart(1000);
    clock.advance(999);
    expect(expired()).toBe(0);
    clock.advance(1);
    expect(expired()).toBe(1);
    clock.advance(5000);
    expect(expired()).toBe(1);
  });

  it('starts over from the full time when restarted', () => {
    const { clock, expiry, expired } = countdown();
    expiry.restart(1000);
    clock.advance(800);
    expiry.restart(1000);
    clock.advance(800);
    expect(expired()).toBe(0);
    clock.advance(200);
    expect(expired()).toBe(1);
  });

  it('does not run out after stop, nor without an x-expires', () => {
    const { clock, expiry, expired } = countdown();
    expiry.restart(1000);
    expiry.stop();
    expiry.restart(undefined);
    clock.advance(5000);
    expect(expired()).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('starts no countdown once closed', () => {
    const { clock, expiry, expired } = countdown();
    expiry.restart(1000);
    expiry.close();
    expiry.restart(1000);
    clock.advance(5000);
    expect(expired()).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });
});
