/**
 * The server's memory alarm, RabbitMQ's (`vm_memory_high_watermark`): the process's memory is
 * read every `intervalMs` on the server's clock; at or above the high watermark the alarm is
 * raised and publishing connections are blocked (see connection.ts), below it the alarm clears
 * and they are unblocked. A test holds it raised through `ServerFaults.block()`. Consumers go on meanwhile, so queues drain. Each change is published
 * on `mqlite:alarm`; `server.alarms()` answers RabbitMQ's local-alarms health check.
 */
import os from 'node:os';
import type { Clock, TimerHandle } from '../clock.js';
import { alarmChannel } from '../diagnostics.js';

/** The memory alarm's options (`listen({ memory })`). */
export interface MemoryAlarmOptions {
  /**
   * The high watermark as a fraction of the machine's memory (its cgroup limit when lower):
   * RabbitMQ's `vm_memory_high_watermark.relative`, default 0.4. 0 blocks every publisher at
   * once, as on RabbitMQ.
   */
  readonly relative?: number;
  /** The high watermark in bytes (RabbitMQ's `.absolute`); wins over `relative`. */
  readonly absolute?: number;
  /** How often memory is read, in ms (default 2500, RabbitMQ's `memory_monitor_interval`). */
  readonly intervalMs?: number;
  /** Reads the memory in use, in bytes (default: the process's resident set size). */
  readonly read?: () => number;
  /** The machine's memory, in bytes (default: `os.totalmem()`, or the cgroup limit when lower). */
  readonly total?: number;
}

/** A resource alarm in effect. */
export interface ResourceAlarm {
  readonly resource: 'memory';
  /** Bytes in use at the last reading. */
  readonly used: number;
  /** The high watermark, in bytes. */
  readonly limit: number;
}

/** RabbitMQ's default high watermark: 0.4 of the machine's memory. */
const DEFAULT_RELATIVE = 0.4;
const DEFAULT_INTERVAL_MS = 2500;

/** The memory the process may use: the machine's, or its cgroup limit when lower. */
function machineMemory(): number {
  const total = os.totalmem();
  const constrained = (
    process as { constrainedMemory?: () => number | undefined }
  ).constrainedMemory?.();
  return constrained !== undefined && constrained > 0 && constrained < total ? constrained : total;
}

/** The high watermark in bytes that `options` give. */
export function highWatermark(options: MemoryAlarmOptions): number {
  const { absolute, relative } = options;
  if (absolute !== undefined) {
    if (!Number.isSafeInteger(absolute) || absolute < 0) {
      throw new RangeError(`memory.absolute must be a whole number of bytes, got ${absolute}`);
    }
    return absolute;
  }
  const fraction = relative ?? DEFAULT_RELATIVE;
  if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
    throw new RangeError(`memory.relative must be a fraction 0..1, got ${String(fraction)}`);
  }
  return Math.floor((options.total ?? machineMemory()) * fraction);
}

export class MemoryAlarm {
  readonly limit: number;
  #used = 0;
  #raised = false;
  /** Held raised whatever memory reads (see `hold`). */
  #held = false;
  readonly #read: () => number;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #onChange: (raised: boolean) => void;
  #timer: TimerHandle | undefined;

  /** Reads memory at once and every `intervalMs`; `onChange` hears the alarm go on and off. */
  constructor(options: MemoryAlarmOptions, clock: Clock, onChange: (raised: boolean) => void) {
    this.limit = highWatermark(options);
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
      throw new RangeError(`memory.intervalMs must be a positive number, got ${intervalMs}`);
    }
    this.#intervalMs = intervalMs;
    this.#read = options.read ?? (() => process.memoryUsage.rss());
    this.#clock = clock;
    this.#onChange = onChange;
    this.check();
    this.#schedule();
  }

  /** Whether the alarm is in effect. */
  get raised(): boolean {
    return this.#raised;
  }

  /** The alarms in effect: this one, or none. */
  alarms(): ResourceAlarm[] {
    return this.#raised ? [{ resource: 'memory', used: this.#used, limit: this.limit }] : [];
  }

  /**
   * Holds the alarm raised whatever memory reads, as RabbitMQ's watermark set to 0 does (how
   * a test blocks publishers), or lets the readings decide again.
   */
  hold(held: boolean): void {
    this.#held = held;
    this.check();
  }

  /** Reads the memory now, raising or clearing the alarm. */
  check(): void {
    this.#used = this.#read();
    const raised = this.#held || this.#used >= this.limit;
    if (raised === this.#raised) return;
    this.#raised = raised;
    if (alarmChannel.hasSubscribers) {
      alarmChannel.publish({ resource: 'memory', raised, used: this.#used, limit: this.limit });
    }
    this.#onChange(raised);
  }

  /** Stops reading. */
  stop(): void {
    if (this.#timer) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.check();
      this.#schedule();
    }, this.#intervalMs);
  }
}
