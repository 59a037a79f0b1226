/**
 * The delivery order of a quorum queue, as RabbitMQ 4's quorum queues keep it, over a two-level
 * `LevelStore`:
 * - returned (requeued) messages go out first, in the order they came back, ahead of every
 *   message not yet delivered (RabbitMQ 3.10 and 4.x alike);
 * - two priorities, high (`priority` above 4) and normal (the rest, and none), served 2:1: every
 *   third message is a normal one when both wait, unless the high one waiting arrived first
 *   (RabbitMQ 4.0 and later; 3.10 ignores priorities).
 *
 * A returned message stays in flight in the inner store, so its record and position are the
 * inner store's business; this store only counts it as ready.
 */
import { bodyLength } from '../../message/packed-message.js';
import type { StoredMessage } from '../../message/types.js';
import type { LevelStore } from '../classic/level-store.js';
import { NO_HANDLE, type ReadyStore } from '../classic/ready-store.js';

/** The level of a priority: high above 4, as RabbitMQ 4 maps them. */
export function quorumLevel(priority: number): number {
  return priority > 4 ? HIGH : NORMAL;
}

const NORMAL = 0;
const HIGH = 1;
/** High messages served for each normal one while both wait. */
const WEIGHT = 2;

export class QuorumStore implements ReadyStore {
  readonly #inner: LevelStore;
  /** Returned messages in the order they came back (in flight in the inner store). */
  readonly #returns = new Map<number, number>();
  #returnSeq = 0;
  #returnedBytes = 0;
  /** Deliveries from the two levels since the last normal one given its turn (0..WEIGHT). */
  #turn = 0;
  /** Arrival order of messages added while high ones may wait beside normal ones. */
  readonly #arrivals = new Map<number, number>();
  #arrivalSeq = 0;

  constructor(inner: LevelStore) {
    this.#inner = inner;
  }

  /** Never called: nothing displaces a quorum queue's messages. */
  onDisplaced?: ((handle: number) => void) | undefined;

  /** See `ReadyStore.onReadyRemoved`. */
  onReadyRemoved: (() => void) | undefined;

  get deletionsAfter(): Promise<unknown> | undefined {
    return this.#inner.deletionsAfter;
  }

  set deletionsAfter(after: Promise<unknown> | undefined) {
    this.#inner.deletionsAfter = after;
  }

  get retainsMessages(): boolean {
    return this.#inner.retainsMessages;
  }

  get readyCount(): number {
    return this.#inner.readyCount + this.#returns.size;
  }

  get readyBytes(): number {
    return this.#inner.readyBytes + this.#returnedBytes;
  }

  get inFlightCount(): number {
    return this.#inner.inFlightCount - this.#returns.size;
  }

  get inFlightBytes(): number {
    return this.#inner.inFlightBytes - this.#returnedBytes;
  }

  prepare(message: StoredMessage): Promise<void> | undefined {
    return this.#inner.prepare(message);
  }

  add(message: StoredMessage, timestamp: number): number {
    const handle = this.#inner.add(message, timestamp);
    // Arrival order matters only while high messages may be compared with normal ones.
    if (this.#arrivals.size > 0 || this.#inner.readyCountOf(HIGH) > 0) {
      this.#arrivals.set(handle, this.#arrivalSeq++);
    }
    return handle;
  }

  peek(): number {
    const returned = this.#firstReturned();
    if (returned !== NO_HANDLE) return returned;
    return this.#inner.peekLevel(this.#nextLevel());
  }

  shift(): number {
    const handle = this.#shift();
    if (handle !== NO_HANDLE) this.onReadyRemoved?.();
    return handle;
  }

  #shift(): number {
    const returned = this.#firstReturned();
    if (returned !== NO_HANDLE) {
      this.#unreturn(returned);
      return returned;
    }
    const level = this.#nextLevel();
    const handle = this.#inner.shiftLevel(level);
    if (handle === NO_HANDLE) return NO_HANDLE;
    this.#turn = this.#turn === WEIGHT ? 0 : this.#turn + 1;
    this.#arrivals.delete(handle);
    return handle;
  }

  requeue(handle: number): boolean {
    if (this.isReady(handle)) throw new RangeError(`message ${handle} is ready, not in flight`);
    this.#returns.set(handle, this.#returnSeq++);
    this.#returnedBytes += bodyLength(this.#inner.message(handle));
    return true;
  }

  settle(handle: number): void {
    this.#inner.settle(handle);
  }

  remove(handle: number): void {
    if (this.#returns.has(handle)) {
      this.#unreturn(handle);
      this.#inner.settle(handle);
    } else {
      this.#inner.remove(handle);
      this.#arrivals.delete(handle);
    }
    this.onReadyRemoved?.();
  }

  purge(): number {
    const returned = [...this.#returns.keys()];
    for (const handle of returned) {
      this.#unreturn(handle);
      this.#inner.settle(handle);
    }
    this.#arrivals.clear();
    const purged = returned.length + this.#inner.purge();
    this.onReadyRemoved?.();
    return purged;
  }

  rank(handle: number): number {
    const returned = this.#returns.get(handle);
    // Returned messages rank ahead of every other (inner ranks are non-negative).
    return returned === undefined ? this.#inner.rank(handle) : returned - 2 ** 52;
  }

  isReady(handle: number): boolean {
    return this.#returns.has(handle) || this.#inner.isReady(handle);
  }

  message(handle: number): StoredMessage {
    return this.#inner.message(handle);
  }

  timestamp(handle: number): number {
    return this.#inner.timestamp(handle);
  }

  deliveredBeforeOpen(handle: number): boolean {
    return this.#inner.deliveredBeforeOpen(handle);
  }

  takeRecoveredExpirations(): Iterable<[handle: number, ttl: number]> {
    return this.#inner.takeRecoveredExpirations();
  }

  *ready(): IterableIterator<number> {
    yield* [...this.#returns.keys()];
    yield* this.#inner.ready();
  }

  sync(): Promise<void> {
    return this.#inner.sync();
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  #firstReturned(): number {
    if (this.#returns.size === 0) return NO_HANDLE;
    return this.#returns.keys().next().value!;
  }

  #unreturn(handle: number): void {
    this.#returns.delete(handle);
    this.#returnedBytes -= bodyLength(this.#inner.message(handle));
  }

  /**
   * The level the next message comes from: high while any waits, except on normal's turn (every
   * third), when the older of the two heads goes.
   */
  #nextLevel(): number {
    const inner = this.#inner;
    if (inner.readyCountOf(HIGH) === 0) return NORMAL;
    if (this.#turn !== WEIGHT || inner.readyCountOf(NORMAL) === 0) return HIGH;
    return this.#arrivedBefore(inner.peekLevel(HIGH), inner.peekLevel(NORMAL)) ? HIGH : NORMAL;
  }

  /** Whether stored message `a` arrived before `b` (recovered ones by their arrival time). */
  #arrivedBefore(a: number, b: number): boolean {
    const inner = this.#inner;
    const ta = inner.timestamp(a);
    const tb = inner.timestamp(b);
    if (ta !== tb) return ta < tb;
    return (this.#arrivals.get(a) ?? -1) < (this.#arrivals.get(b) ?? -1);
  }
}
