/**
 * Time. Every time-based rule (message TTL, queue expiry, stream max-age) reads a `Clock`, so a
 * test can inject `ManualClock` from `mqlite/testing` and move time forward without sleeping.
 */

/** An opaque timer handle returned by `Clock.setTimeout`. */
export interface TimerHandle {
  /** Keeps the process alive until the timer fires (default for the system clock: no). */
  ref?(): unknown;
  unref?(): unknown;
}

/** A source of time and timers. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; unknown or fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * The real clock. Its timers are unref'd: a pending TTL or expiry timer never keeps the process
 * alive on its own.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, Math.max(0, ms));
    timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
