/**
 * The server's memory alarm, RabbitMQ's (`vm_memory_high_watermark`): the process's memory is
 * read every `intervalMs`; at or above the high watermark the alarm is raised and publishing
 * connections are blocked until it falls below (see `resource-alarm.ts`).
 */
import os from 'node:os';
import { checkInterval, type WatchedResource } from './resource-alarm.js';

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

/** RabbitMQ's default high watermark: 0.4 of the machine's memory. */
const DEFAULT_RELATIVE = 0.4;
const DEFAULT_INTERVAL_MS = 2500;

/** The memory the process may use: the machine's, or its cgroup limit when lower. */
export function machineMemory(): number {
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

/** The memory alarm `options` describe. */
export function memoryAlarm(options: MemoryAlarmOptions): WatchedResource {
  const limit = highWatermark(options);
  return {
    resource: 'memory',
    limit,
    intervalMs: checkInterval('memory', options.intervalMs ?? DEFAULT_INTERVAL_MS),
    read: options.read ?? (() => process.memoryUsage.rss()),
    raises: (used) => used >= limit,
    describe: (used) => ({ resource: 'memory', used, limit }),
  };
}
