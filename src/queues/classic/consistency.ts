/**
 * The invariants of a ready store, checked on demand: counts and bytes never negative, and the
 * ready count and bytes equal to what a walk of the ready messages finds. Tests call it after
 * every step of a random sequence; a broken invariant is a bug however it came about.
 */
import { bodyLength } from '../../message/packed-message.js';
import type { ReadyStore } from './ready-store.js';

/** What is wrong with `store`'s bookkeeping, or undefined when it is consistent. */
export function storeInconsistency(store: ReadyStore): string | undefined {
  const counts: [string, number][] = [
    ['ready count', store.readyCount],
    ['ready bytes', store.readyBytes],
    ['unacked count', store.inFlightCount],
    ['unacked bytes', store.inFlightBytes],
  ];
  for (const [what, value] of counts) {
    if (!(Number.isSafeInteger(value) && value >= 0)) return `${what} is ${value}`;
  }
  let ready = 0;
  let bytes = 0;
  const seen = new Set<number>();
  for (const handle of store.ready()) {
    if (seen.has(handle)) return `message ${handle} is ready twice`;
    seen.add(handle);
    if (!store.isReady(handle)) return `message ${handle} is listed ready but is not`;
    ready++;
    bytes += bodyLength(store.message(handle));
  }
  if (ready !== store.readyCount) return `ready count is ${store.readyCount}, ${ready} are ready`;
  if (bytes !== store.readyBytes) {
    return `ready bytes are ${store.readyBytes}, the ready messages hold ${bytes}`;
  }
  return undefined;
}
