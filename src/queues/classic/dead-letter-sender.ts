/**
 * Where a classic queue's dead messages go: the `mqlite:drop` and `mqlite:dead-letter` events, the
 * dead-letter copy handed to the router (cycles dropped), and a priority queue's rejected messages
 * sent together highest priority first. Separate from `ClassicQueue` because none of it touches
 * the queue's messages: the queue settles or removes the record, this sends the copy on.
 */
import type { Clock, TimerHandle } from '../../clock.js';
import { type DropReason, deadLetterChannel, dropChannel } from '../../diagnostics.js';
import { QueueFullError } from '../../errors.js';
import type { StoredMessage } from '../../message/types.js';
import type { ClassicArguments } from '../arguments.js';
import {
  type DeadLetterConfirms,
  type DeadLetterRouter,
  type DeathReason,
  deadLetteredCopy,
  isDeadLetterCycle,
  UnconfirmedDeadLetter,
} from './dead-letter.js';
import {
  type DeadLetterHop,
  runDeadLetterHops,
  scheduleDeadLetterHop,
} from './dead-letter-hops.js';

/**
 * How long an `at-least-once` dead letter that some queue did not confirm waits before it is
 * tried again: RabbitMQ's `dead_letter_worker_publisher_confirm_timeout` default.
 */
export const DEAD_LETTER_RETRY_MS = 180_000;

/**
 * Whether `limits` dead-letter `at-least-once`: the strategy asked for, with `reject-publish`
 * overflow and a dead-letter exchange (RabbitMQ falls back to `at-most-once` otherwise).
 */
export function atLeastOnce(limits: ClassicArguments): boolean {
  return (
    limits.deadLetterStrategy === 'at-least-once' &&
    limits.overflow === 'reject-publish' &&
    limits.deadLetterExchange !== undefined
  );
}

/** What the sender reads of its queue at each death: the limits change with `applyLimits`. */
export interface DeadLetterSource {
  readonly name: string;
  readonly limits: ClassicArguments;
}

/** A rejected message waiting for the end of its run of rejects. */
interface Rejected {
  readonly message: StoredMessage;
  readonly routed: (stored: Promise<void> | undefined) => void;
}

/** Sends the dead messages of one queue to its dead-letter exchange, if it has one. */
export class DeadLetterSender {
  readonly #queue: DeadLetterSource;
  readonly #clock: Clock;
  readonly #router: DeadLetterRouter | undefined;
  /** Reports a dead letter that could not be routed or stored. */
  readonly #onError: (error: unknown) => void;
  /** Rejected messages of a priority queue waiting to be dead-lettered together. */
  readonly #rejected: Rejected[] = [];
  readonly #held = { count: 0, bytes: 0 };
  readonly #retries: (() => void)[] = [];
  #retryTimer: TimerHandle | undefined;
  #closed = false;
  /** Hops kept back until `release` (see `hold`), in the order they were sent. */
  #keptBack: DeadLetterHop[] | undefined;

  constructor(
    queue: DeadLetterSource,
    clock: Clock,
    router: DeadLetterRouter | undefined,
    onError: (error: unknown) => void,
  ) {
    this.#queue = queue;
    this.#clock = clock;
    this.#router = router;
    this.#onError = onError;
  }

  /**
   * Publishes the drop event (callers check `dropChannel.hasSubscribers` first). `dlx`: the rule
   * dead-letters the message if the queue has somewhere to send it.
   */
  reportDrop(message: StoredMessage, reason: DropReason, dlx: boolean): void {
    const deadLettered =
      dlx && this.#queue.limits.deadLetterExchange !== undefined && this.#router !== undefined;
    dropChannel.publish({ queue: this.#queue.name, reason, message, deadLettered });
  }

  /**
   * Makes the dead-letter copy and schedules its hop to the router (`runDeadLetterHops` runs
   * it, once the queue has updated its own state). Returns the promise of the copy's storage,
   * or undefined when nothing is sent (no dead-letter exchange, or a cycle).
   */
  send(message: StoredMessage, reason: DeathReason): Promise<void> | undefined {
    const copy = this.#copy(message, reason);
    if (copy === undefined) return undefined;
    const router = this.#router!;
    let routed!: (stored: Promise<void> | undefined) => void;
    const stored = new Promise<void>((resolve) => {
      routed = resolve as (stored: Promise<void> | undefined) => void;
    });
    // Reported below through `onError`; whoever waits on it sees the rejection too.
    stored.catch(ignore);
    const onError = this.#onError;
    const hop: DeadLetterHop = {
      run() {
        const result = router(copy);
        if (result) result.catch(onError);
        routed(result ?? undefined);
      },
      fail(error) {
        onError(error);
        routed(undefined);
      },
    };
    this.#schedule(hop);
    return stored;
  }

  /**
   * Dead-letters `at-least-once`, as RabbitMQ's quorum queues do: the copy is sent as `send`
   * sends it, and resolves only once every queue it routes to stored it. Until then it counts
   * in `held` (against the queue's length limits); one that reached no queue, or that a queue
   * refused, is tried again every {@link DEAD_LETTER_RETRY_MS} on the queue's clock, sent only to
   * the queues that have not stored it yet. After `close` it stays unresolved: its record stays
   * in the source and comes back on reopen. Returns undefined when nothing is sent.
   */
  sendConfirmed(message: StoredMessage, reason: DeathReason): Promise<void> | undefined {
    const copy = this.#copy(message, reason);
    if (copy === undefined) return undefined;
    const router = this.#router!;
    const bytes = message.body.length;
    const confirms: DeadLetterConfirms = { confirmed: new Set() };
    this.#held.count++;
    this.#held.bytes += bytes;
    return new Promise<void>((resolve) => {
      const done = () => {
        this.#held.count--;
        this.#held.bytes -= bytes;
        resolve();
      };
      const retry = (error: unknown) => {
        if (!(error instanceof UnconfirmedDeadLetter || error instanceof QueueFullError)) {
          this.#onError(error);
        }
        this.#retryLater(attempt);
      };
      const attempt = () => {
        if (this.#closed) return;
        // Switched to at-most-once meanwhile: what is not confirmed yet goes, as in RabbitMQ.
        if (!atLeastOnce(this.#queue.limits)) return done();
        this.#schedule({
          run() {
            const result = router(copy, confirms);
            if (result) result.then(done, retry);
            else done();
          },
          fail: retry,
        });
      };
      attempt();
    });
  }

  /** Messages and body bytes dead-lettered `at-least-once` and not yet confirmed. */
  get held(): { readonly count: number; readonly bytes: number } {
    return this.#held;
  }

  /** Stops retrying: the unconfirmed dead letters stay in the source queue's storage. */
  close(): void {
    this.#closed = true;
    if (this.#retryTimer !== undefined) this.#clock.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#retries.length = 0;
  }

  /** One timer for every dead letter waiting to be tried again. */
  #retryLater(attempt: () => void): void {
    if (this.#closed) return;
    this.#retries.push(attempt);
    if (this.#retryTimer !== undefined) return;
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = undefined;
      for (const again of this.#retries.splice(0)) again();
      runDeadLetterHops();
    }, DEAD_LETTER_RETRY_MS);
  }

  /** The copy to send for a death, or undefined when nothing is sent. */
  #copy(message: StoredMessage, reason: DeathReason): StoredMessage | undefined {
    const queue = this.#queue;
    const { deadLetterExchange, deadLetterRoutingKey } = queue.limits;
    if (deadLetterExchange === undefined || this.#router === undefined) return undefined;
    const copy = deadLetteredCopy(
      message,
      queue.name,
      reason,
      this.#clock.now(),
      deadLetterExchange,
      deadLetterRoutingKey,
    );
    // Through the default exchange the target is the routing key: cycles are dropped here.
    if (copy.exchange === '' && isDeadLetterCycle(copy, copy.routingKey)) return undefined;
    if (deadLetterChannel.hasSubscribers) {
      deadLetterChannel.publish({
        queue: queue.name,
        reason,
        exchange: copy.exchange,
        routingKey: copy.routingKey,
        message: copy,
      });
    }
    return copy;
  }

  /**
   * Keeps the copies sent from now on (and their hops) back until `release`: a queue finishing a
   * requeue delivers to its consumers before its dead letters can come back round a loop, as a
   * RabbitMQ queue, a process of its own, takes them only once the requeue is done.
   */
  hold(): void {
    this.#keptBack ??= [];
  }

  /** Schedules a hop, or keeps it back while `hold` is in effect, whatever the strategy. */
  #schedule(hop: DeadLetterHop): void {
    if (this.#keptBack) this.#keptBack.push(hop);
    else scheduleDeadLetterHop(hop);
  }

  /** Sends what `hold` kept back, in order, and what they set off. */
  release(): void {
    const held = this.#keptBack;
    if (held === undefined) return;
    this.#keptBack = undefined;
    for (const hop of held) scheduleDeadLetterHop(hop);
    runDeadLetterHops();
  }

  /**
   * Sends a rejected message at the end of this synchronous run of rejects (a multiple nack),
   * the run highest priority first, as RabbitMQ's priority queue does. Returns the promise of
   * its copy's storage, for the queue to delete the record after.
   */
  sendRejected(message: StoredMessage, maxPriority: number): Promise<void> {
    let routed!: (stored: Promise<void> | undefined) => void;
    const stored = new Promise<Promise<void> | undefined>((resolve) => {
      routed = resolve;
    }).then((copy) => copy);
    const batch = this.#rejected;
    batch.push({ message, routed });
    if (batch.length > 1) return stored;
    queueMicrotask(() => {
      const level = (m: StoredMessage) => Math.min(m.properties.priority ?? 0, maxPriority);
      const ordered = batch.splice(0).sort((x, y) => level(y.message) - level(x.message));
      for (const { message: m, routed: done } of ordered) done(this.send(m, 'rejected'));
      runDeadLetterHops();
    });
    return stored;
  }
}

function ignore(): void {}
