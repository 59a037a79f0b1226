/**
 * `consumeOne`: waiting for a single message with a timeout and an abort signal, over an ordinary
 * one-message consumer. Separate from `ClassicQueue` because it is a client of the queue's
 * consumers, not part of their machinery: it only subscribes, acks and cancels.
 */
import type { Clock, TimerHandle } from '../../clock.js';
import { AbortedError, ClosedError, TimeoutError } from '../../errors.js';
import type { Message } from '../../message/message.js';
import type { ConsumerCallback, Subscription } from '../consumer.js';

/**
 * Waits on queue `queue` for one message, acks it and resolves with it (see
 * `ClassicQueue.consumeOne`). `subscribe` starts a manual-ack consumer with prefetch 1.
 */
export function waitForOne(
  queue: string,
  clock: Clock,
  subscribe: (callback: ConsumerCallback) => Subscription<number>,
  options: { timeout?: number; signal?: AbortSignal },
): Promise<Message> {
  const { timeout, signal } = options;
  if (timeout !== undefined && !(typeof timeout === 'number' && timeout >= 0)) {
    return Promise.reject(new RangeError('consumeOne() timeout must be a number ≥ 0'));
  }
  if (signal !== undefined && !isAbortSignal(signal)) {
    return Promise.reject(new TypeError('consumeOne() signal must be an AbortSignal'));
  }
  if (signal?.aborted) {
    return Promise.reject(new AbortedError('consumeOne() aborted', { cause: signal.reason }));
  }
  return new Promise<Message>((resolve, reject) => {
    let done = false;
    let timer: TimerHandle | undefined;
    let sub: Subscription<number> | undefined;
    const finish = (error?: Error) => {
      if (done) return false;
      done = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) {
        void sub?.close();
        reject(error);
      }
      return true;
    };
    const onAbort = () =>
      finish(new AbortedError('consumeOne() aborted', { cause: signal?.reason }));
    try {
      sub = subscribe((message) => {
        if (!finish()) return;
        void message.cancelConsumer();
        message.ack().then(() => resolve(message), reject);
      });
    } catch (error) {
      reject(error);
      return;
    }
    sub.onCancelled(() =>
      finish(new ClosedError(`queue '${queue}' closed while waiting for a message`)),
    );
    if (done) return;
    signal?.addEventListener('abort', onAbort, { once: true });
    if (timeout !== undefined) {
      timer = clock.setTimeout(
        () => finish(new TimeoutError(`no message on queue '${queue}' within ${timeout} ms`)),
        timeout,
      );
      // Clock timers do not hold the process open; a caller awaiting this one is owed its end.
      timer.ref?.();
    }
  });
}

/** An AbortSignal, or an object that behaves as one (another realm's, a polyfill). */
function isAbortSignal(value: unknown): value is AbortSignal {
  if (value instanceof AbortSignal) return true;
  const candidate = value as Partial<AbortSignal> | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.aborted === 'boolean' &&
    typeof candidate.addEventListener === 'function' &&
    typeof candidate.removeEventListener === 'function'
  );
}
