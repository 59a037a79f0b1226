/**
 * RabbitMQ's resource alarms, the machinery they share: each resource (memory, free disk) is
 * read every `intervalMs` on the server's clock and its alarm raised or cleared against its
 * limit; while any alarm is in effect, publishing connections are blocked (see connection.ts),
 * told why (`low on memory`, `low on disk`, or both joined by ` & `, as RabbitMQ words it). Each
 * change is published on `mqlite:alarm`; `alarms()` answers RabbitMQ's local-alarms health check.
 */
import type { Clock, TimerHandle } from '../clock.js';
import { alarmChannel } from '../diagnostics.js';

/** A resource alarm in effect, with the reading that raised it. */
export type ResourceAlarm =
  | {
      readonly resource: 'memory';
      /** Bytes in use at the last reading. */
      readonly used: number;
      /** The high watermark, in bytes. */
      readonly limit: number;
    }
  | {
      readonly resource: 'disk';
      /** Bytes free at the last reading. */
      readonly free: number;
      /** The free space limit, in bytes. */
      readonly limit: number;
    };

/** What an alarm watches: how to read its resource and when the reading raises it. */
export interface WatchedResource {
  readonly resource: ResourceAlarm['resource'];
  readonly limit: number;
  readonly intervalMs: number;
  /** The reading, in bytes. */
  read(): number;
  /** Whether `reading` raises the alarm. */
  raises(reading: number): boolean;
  /** The alarm of `reading`, as `alarms()` and `mqlite:alarm` show it. */
  describe(reading: number): ResourceAlarm;
}

/** Checks an alarm's reading interval. */
export function checkInterval(name: string, intervalMs: number): number {
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
    throw new RangeError(`${name}.intervalMs must be a positive number, got ${intervalMs}`);
  }
  return intervalMs;
}

/** One resource read on the clock. */
class Watch {
  readonly watched: WatchedResource;
  reading = 0;
  raised = false;
  timer: TimerHandle | undefined;

  constructor(watched: WatchedResource) {
    this.watched = watched;
  }
}

/** The resource alarms of a server; `onChange` hears whether publishers are blocked, and why. */
export class ResourceAlarms {
  readonly #watches: Watch[];
  readonly #clock: Clock;
  readonly #onChange: (blockedBy: readonly string[]) => void;
  /** The memory alarm held raised whatever memory reads (see `hold`). */
  #held = false;

  /** Reads every resource at once and then every `intervalMs`. */
  constructor(
    watched: readonly WatchedResource[],
    clock: Clock,
    onChange: (blockedBy: readonly string[]) => void,
  ) {
    this.#watches = watched.map((w) => new Watch(w));
    this.#clock = clock;
    this.#onChange = onChange;
    for (const watch of this.#watches) {
      this.#check(watch);
      this.#schedule(watch);
    }
  }

  /** The resources whose alarm is in effect (empty: publishers go on). */
  get blockedBy(): readonly string[] {
    return this.#watches.filter((w) => w.raised).map((w) => w.watched.resource);
  }

  /** The alarms in effect, as of their last readings. */
  alarms(): ResourceAlarm[] {
    return this.#watches.filter((w) => w.raised).map((w) => w.watched.describe(w.reading));
  }

  /**
   * Holds the memory alarm raised whatever memory reads, as RabbitMQ's watermark set to 0 does
   * (how a test blocks publishers), or lets the readings decide again.
   */
  hold(held: boolean): void {
    this.#held = held;
    for (const watch of this.#watches) if (watch.watched.resource === 'memory') this.#check(watch);
  }

  /** Stops reading. */
  stop(): void {
    for (const watch of this.#watches) {
      if (watch.timer) this.#clock.clearTimeout(watch.timer);
      watch.timer = undefined;
    }
  }

  #check(watch: Watch): void {
    const { watched } = watch;
    try {
      watch.reading = watched.read();
    } catch {
      // A reading that fails (the data directory gone) leaves the alarm as it was.
      return;
    }
    const raised = (this.#held && watched.resource === 'memory') || watched.raises(watch.reading);
    if (raised === watch.raised) return;
    watch.raised = raised;
    if (alarmChannel.hasSubscribers) {
      alarmChannel.publish({ ...watched.describe(watch.reading), raised });
    }
    this.#onChange(this.blockedBy);
  }

  #schedule(watch: Watch): void {
    watch.timer = this.#clock.setTimeout(() => {
      this.#check(watch);
      this.#schedule(watch);
    }, watch.watched.intervalMs);
  }
}
