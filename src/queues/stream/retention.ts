import type { Clock, TimerHandle } from '../../clock.js';
import type { Log, SegmentInfo } from '../../storage/types.js';
import { maxAgeCutoff, maxAgeExpiry, type StreamArguments } from './arguments.js';

const MAX_TIMER_DELAY = 2 ** 31 - 1;

/**
 * The offset before which retention drops segments now, or 0 when nothing goes. Only whole
 * segments from the head go, never the active (last) one. The head segment goes when any limit
 * says so:
 * - `maxLength`: the messages left after dropping it still number at least the limit (so a
 *   stream keeps at least the limit and at most the limit plus one segment);
 * - `maxLengthBytes`: the same on stored bytes;
 * - `maxAge`: its newest message is older than `now - maxAge`.
 */
export function retentionCut(
  segments: readonly SegmentInfo[],
  limits: StreamArguments,
  now: number,
): number {
  const { maxLength, maxLengthBytes, maxAge } = limits;
  if (maxLength === undefined && maxLengthBytes === undefined && maxAge === undefined) return 0;
  let count = 0;
  let bytes = 0;
  for (const s of segments) {
    count += s.count - s.deletedCount;
    bytes += s.bytes;
  }
  const cutoff = maxAge ? maxAgeCutoff(maxAge, now) : Number.NEGATIVE_INFINITY;
  let cut = 0;
  for (let i = 0; i < segments.length - 1; i++) {
    const s = segments[i]!;
    const leftCount = count - (s.count - s.deletedCount);
    const leftBytes = bytes - s.bytes;
    const drop =
      (maxLength !== undefined && leftCount >= maxLength) ||
      (maxLengthBytes !== undefined && leftBytes >= maxLengthBytes) ||
      s.lastTimestamp < cutoff;
    if (!drop) break;
    count = leftCount;
    bytes = leftBytes;
    cut = s.lastOffset + 1;
  }
  return cut;
}

/**
 * Applies a stream's retention limits to its log: at open, whenever the caller reports that a
 * segment filled, and on a clock timer set for the moment the oldest closed segment ages out (so
 * `x-max-age` applies to an idle stream too).
 */
export class StreamRetention {
  readonly #log: Log<unknown>;
  #limits: StreamArguments;
  readonly #clock: Clock;
  readonly #onDrop: (dropped: number) => void;
  readonly #onError: (error: unknown) => void;
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #closed = false;

  /**
   * @param onDrop called after segments were dropped, with the number of messages that went.
   * @param onError receives the error of a run on the timer, which nobody awaits.
   */
  constructor(
    log: Log<unknown>,
    limits: StreamArguments,
    clock: Clock,
    onDrop: (dropped: number) => void,
    onError: (error: unknown) => void,
  ) {
    this.#log = log;
    this.#limits = limits;
    this.#clock = clock;
    this.#onDrop = onDrop;
    this.#onError = onError;
  }

  /** Drops what the limits no longer allow and re-arms the age timer. Returns messages dropped. */
  run(): number {
    if (this.#closed) return 0;
    const segments = this.#log.segments();
    const cut = retentionCut(segments, this.#limits, this.#clock.now());
    const dropped = cut > 0 ? this.#log.dropBefore(cut) : 0;
    this.#arm();
    if (dropped > 0) this.#onDrop(dropped);
    return dropped;
  }

  /** The limits in force. */
  get limits(): StreamArguments {
    return this.#limits;
  }

  /** Replaces the limits (a policy changed) and applies them at once. */
  setLimits(limits: StreamArguments): number {
    this.#limits = limits;
    this.#disarm();
    return this.run();
  }

  /** Stops the timer. */
  close(): void {
    this.#closed = true;
    this.#disarm();
  }

  #arm(): void {
    const age = this.#limits.maxAge;
    if (!age) return;
    const segments = this.#log.segments();
    // The oldest closed segment is the next to age out; the active one never goes by age.
    const oldest = segments.length > 1 ? segments[0] : undefined;
    const at = oldest ? maxAgeExpiry(age, oldest.lastTimestamp) : Number.POSITIVE_INFINITY;
    if (at === this.#timerAt) return;
    this.#disarm();
    if (at === Number.POSITIVE_INFINITY) return;
    this.#timerAt = at;
    // Timers cannot wait longer than 2^31-1 ms; an early wake finds nothing and re-arms.
    const delay = Math.min(at - this.#clock.now(), MAX_TIMER_DELAY);
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      try {
        this.run();
      } catch (error) {
        this.#onError(error);
      }
    }, delay);
  }

  #disarm(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }
}
