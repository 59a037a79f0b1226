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

/** The share of a limit a quorum queue refusing publishes must drain to before it takes them. */
const LOW_MARK = 0.8;

/** Dead letters still counted against the queue's limits (see `DeadLetterSender.held`). */
interface Held {
  readonly count: number;
  readonly bytes: number;
}

/**
 * `reject-publish` as RabbitMQ's quorum queues apply it: the queue takes publishes until a change
 * leaves it past a limit (so the message that passes it is taken), then refuses them until it is
 * back to 80% of every limit it has (rounded down), whatever took it below its limits meanwhile.
 * Messages delivered and not yet acknowledged do not count, as in every length limit.
 */
export class PublishGate {
  /** Why the queue refuses publishes, while it does. */
  #refusing: 'maxlen' | 'maxlenbytes' | undefined;

  /** The limit a publish is refused by now, if it is. */
  get refusing(): 'maxlen' | 'maxlenbytes' | undefined {
    return this.#refusing;
  }

  /** After a change that may have added ready messages (a publish, a requeue, new limits). */
  added(limits: ClassicArguments, store: ReadyStore, held: Held): void {
    if (limits.overflow !== 'reject-publish') return;
    this.#refusing = overLengthLimit(limits, store, held.count, held.bytes) ?? this.#refusing;
  }

  /** After a change that may have taken ready messages away, or raised the limits. */
  removed(limits: ClassicArguments, store: ReadyStore, held: Held): void {
    if (this.#refusing === undefined) return;
    const { maxLength, maxLengthBytes } = limits;
    const low = (limit: number | undefined, n: number) =>
      limit === undefined || n <= Math.trunc(limit * LOW_MARK);
    if (
      limits.overflow !== 'reject-publish' ||
      (low(maxLength, store.readyCount + held.count) &&
        low(maxLengthBytes, store.readyBytes + held.bytes))
    ) {
      this.#refusing = undefined;
    }
  }
}
