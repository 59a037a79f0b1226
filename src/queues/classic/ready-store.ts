/**
 * The seam between a classic queue's delivery machinery (`ClassicQueue`: consumers, acks, TTL,
 * limits, dead-lettering) and where its messages live in delivery order. The plain FIFO queue and
 * the priority queue use `LevelStore` (one log per priority level); the last-value queue plugs in
 * a conflating store.
 *
 * A store holds every message of its queue that is not yet settled, in one of two states:
 *
 * ```
 *   add ──▶ ready ──shift──▶ in flight ──settle──▶ gone
 *             ▲                  │
 *             └────requeue───────┘        ready ──remove──▶ gone
 * ```
 *
 * Messages are named by a *handle*: a non-negative integer the store assigns in `add` (or when it
 * recovers from storage), stable while the message is stored, never reused by the same store
 * instance. Handles are plain numbers so the queue can index them without allocating.
 *
 * Every method is synchronous except `prepare`, `sync` and `close`: the queue calls them on its hot
 * path. Persistence happens behind them (append on `add`, delete marks on `settle`/`remove`),
 * durable once `sync()` resolves.
 */
import type { StoredMessage } from '../../message/types.js';
import type { Log } from '../../storage/types.js';

/** Returned by `peek`/`shift` when no message is ready. */
export const NO_HANDLE = -1;

/**
 * Marks a stored record deleted, at once or, with `after`, once that promise resolves (never
 * if it rejects: the record then comes back on reopen, which loses nothing).
 */
export function deleteRecord(
  log: Pick<Log<unknown>, 'markDeleted' | 'count'>,
  offset: number,
  after: Promise<unknown> | undefined,
): void {
  if (after === undefined) {
    log.markDeleted(offset);
    return;
  }
  after.then(
    () => {
      // A log closed meanwhile keeps the record: it comes back on reopen, as after a crash.
      if (!isClosed(log)) log.markDeleted(offset);
    },
    () => {},
  );
}

function isClosed(log: Pick<Log<unknown>, 'count'>): boolean {
  try {
    void log.count;
    return false;
  } catch {
    return true;
  }
}

export interface ReadyStore {
  /** Messages in the ready state. */
  readonly readyCount: number;
  /** Body bytes of the ready messages (what `x-max-length-bytes` limits). */
  readonly readyBytes: number;
  /** Messages taken by `shift` and neither settled nor requeued yet. */
  readonly inFlightCount: number;
  /** Body bytes of the in-flight messages. */
  readonly inFlightBytes: number;
  /**
   * Whether `add` keeps the message object it is given. A store that does not (its storage
   * encodes the message within `add` and lets it go) may be handed the publisher's own body
   * bytes: the queue then copies nothing a publish does not keep.
   */
  readonly retainsMessages: boolean;

  /**
   * Set by the queue: called when `add` removes a ready message that a newer one displaced (an
   * LVQ's older value), so the queue can forget what it tracks for that handle.
   */
  onDisplaced?: ((handle: number) => void) | undefined;

  /**
   * Set by a quorum queue on its store: called after `shift`, `remove` or `purge` took ready
   * messages away, so the queue can take publishes again once it drained (see `PublishGate`).
   */
  onReadyRemoved?: (() => void) | undefined;

  /**
   * Set by the queue around the `settle` or `remove` of a message it dead-lettered: the deletion
   * of its record waits for this promise (the copy's storage in the dead-letter queue), so a
   * crash never loses both. Undefined otherwise: deletions are marked at once.
   */
  deletionsAfter?: Promise<unknown> | undefined;

  /**
   * Gets the store ready to `add` this message synchronously, e.g. by opening the log of a
   * priority level on first use. Returns undefined when nothing needs to wait (the hot path);
   * otherwise the queue awaits the promise before calling `add`. Must not change what is stored.
   */
  prepare(message: StoredMessage): Promise<void> | undefined;

  /**
   * Stores a newly published message as ready, at the tail of its place in delivery order, and
   * returns its handle. `timestamp` is the arrival time on the queue's clock (TTL counts from it).
   * A conflating store may remove other ready messages here (they are simply gone: not
   * dead-lettered, not counted as dropped), reporting each to `onDisplaced`.
   */
  add(message: StoredMessage, timestamp: number): number;

  /** Handle of the next ready message in delivery order, or `NO_HANDLE`. Changes nothing. */
  peek(): number;

  /** Takes the next ready message into flight and returns its handle, or `NO_HANDLE`. */
  shift(): number;

  /**
   * Returns an in-flight message to ready at its original position (ahead of everything that was
   * added after it). Returns false when the store discarded it instead (an LVQ value that a newer
   * one superseded while it was in flight); it is then gone as if settled.
   */
  requeue(handle: number): boolean;

  /** Deletes an in-flight message for good (ack, reject without requeue, dead-lettered). */
  settle(handle: number): void;

  /** Deletes a ready message for good (expiry, length limit, purge). */
  remove(handle: number): void;

  /** Deletes every ready message (in-flight ones stay) and returns how many went. */
  purge(): number;

  /**
   * A number that sorts stored handles in delivery order (the order `ready()` walks them in), for
   * what must keep queue order among messages it otherwise finds equal (those expiring together).
   */
  rank(handle: number): number;

  /** Whether `handle` names a message that is currently ready. */
  isReady(handle: number): boolean;

  /** The message behind a stored (ready or in-flight) handle. */
  message(handle: number): StoredMessage;

  /** Arrival time given to `add` (or recovered from storage) of a stored handle. */
  timestamp(handle: number): number;

  /**
   * Whether the message had been delivered before the store was (re)opened from persistent
   * storage: such a message is delivered with `redelivered: true`. False for everything added
   * since the store opened (the queue tracks those deliveries itself).
   */
  deliveredBeforeOpen(handle: number): boolean;

  /**
   * The ready messages recovered from storage that carry a per-message `expiration`, as
   * (handle, TTL in ms), noted while the store opened so that the queue need not read every
   * message again. The queue asks once, as it opens; the store may forget them afterwards.
   */
  takeRecoveredExpirations(): Iterable<[handle: number, ttl: number]>;

  /**
   * The ready handles in delivery order. The iterator reads the live state: do not mutate the
   * store while iterating (collect first).
   */
  ready(): IterableIterator<number>;

  /** Resolves once everything stored so far (adds, settles, removes) is durable per policy. */
  sync(): Promise<void>;

  /** Flushes and releases the storage. Further calls throw `MQLITE_CLOSED`. */
  close(): Promise<void>;
}
