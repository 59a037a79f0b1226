/**
 * Queues whose stored data could not be opened, kept apart so that damage stays in its queue:
 * the broker opens without them, lists them, and rejects calls on them with their error until
 * they are deleted. This is also the one place where the broker reports damage, its own and
 * what storage recovery cut or restored.
 */
import { type ErrorHandler, reportError } from '../diagnostics.js';
import { CorruptionError, MqliteError } from '../errors.js';
import type { Declaration } from './declare-options.js';

/** A queue that is stored but could not be opened, as `broker.damaged()` lists it. */
export interface DamagedQueue {
  readonly name: string;
  /** Its stored declaration; undefined when none could be read (its directory is all there is). */
  readonly declaration: Declaration | undefined;
  /** Why it could not be opened, with the file and byte range when known. */
  readonly error: MqliteError;
}

export class DamagedQueues {
  readonly #queues = new Map<string, DamagedQueue>();
  readonly #onError: ErrorHandler;

  constructor(onError: ErrorHandler) {
    this.#onError = onError;
  }

  /** Reports damage found or repaired (every report of the broker goes through here). */
  report(error: MqliteError, queue?: string): void {
    reportError(this.#onError, error, 'storage', queue);
  }

  /** Keeps a queue apart and reports why. */
  quarantine(name: string, declaration: Declaration | undefined, cause: unknown): void {
    const error =
      cause instanceof MqliteError
        ? cause
        : new CorruptionError(`queue '${name}' could not be opened: ${String(cause)}`, { cause });
    this.#queues.set(name, { name, declaration, error });
    this.report(error, name);
  }

  has(name: string): boolean {
    return this.#queues.has(name);
  }

  /** The error a call on the damaged queue `name` fails with, if it is damaged. */
  errorOf(name: string): MqliteError | undefined {
    return this.#queues.get(name)?.error;
  }

  delete(name: string): void {
    this.#queues.delete(name);
  }

  /** Every damaged queue, in name order. */
  list(): DamagedQueue[] {
    return [...this.#queues.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }
}
