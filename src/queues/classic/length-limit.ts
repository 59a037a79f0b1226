/**
 * Length limits (`x-max-length`, `x-max-length-bytes`): whether a queue has one and which one a
 * number of new messages would pass. Separate from `ClassicQueue` because it is a question about
 * counts alone; what passing a limit does (refuse the publish, drop the head) is the queue's.
 * Plain functions: the queue asks them on every publish.
 */
import type { ClassicArguments } from '../arguments.js';
import type { ReadyStore } from './ready-store.js';

/** Whether `limits` limit the queue's length or bytes. */
export function hasLengthLimit(limits: ClassicArguments): boolean {
  return limits.maxLength !== undefined || limits.maxLengthBytes !== undefined;
}

/** `maxlen`/`maxlenbytes` if adding `count` messages of `bytes` to `store` would pass a limit. */
export function overLengthLimit(
  limits: ClassicArguments,
  store: ReadyStore,
  count: number,
  bytes: number,
): 'maxlen' | 'maxlenbytes' | undefined {
  const { maxLength, maxLengthBytes } = limits;
  if (maxLength !== undefined && store.readyCount + count > maxLength) return 'maxlen';
  if (maxLengthBytes !== undefined && store.readyBytes + bytes > maxLengthBytes) {
    return 'maxlenbytes';
  }
  return undefined;
}
