/**
 * What every handle of the memory adapter (storage, namespace, log, metadata) shares: its
 * open/closed state and the check of the names handed to it.
 */
import { ClosedError } from '../errors.js';

/** What a handle's `sync()` and `close()` return when there is nothing to wait for. */
export const RESOLVED: Promise<void> = Promise.resolve();

/** The open/closed state of one handle, shared with the cursors and stores hanging off it. */
export class Guard {
  closed = false;
  constructor(readonly what: string) {}
  check(): void {
    if (this.closed) throw new ClosedError(`${this.what} is closed`);
  }
}

export function checkName(name: unknown, what: string): string {
  if (typeof name !== 'string') throw new TypeError(`${what} name must be a string`);
  return name;
}
