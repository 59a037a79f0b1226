/**
 * The server's disk alarm, RabbitMQ's (`disk_free_limit`): the free space of the file system
 * holding the data directory is read every `intervalMs`; below the limit the alarm is raised and
 * publishing connections are blocked until there is enough again (see `resource-alarm.ts`).
 */
import { statfsSync } from 'node:fs';
import { parseBytes } from './information-units.js';
import { machineMemory } from './memory-alarm.js';
import { checkInterval, type WatchedResource } from './resource-alarm.js';

/** The disk alarm's options (`listen({ disk })`). */
export interface DiskAlarmOptions {
  /** A directory on the file system to watch: the data directory. */
  readonly dir: string;
  /**
   * The free space below which publishers are blocked: bytes, or an amount as RabbitMQ's
   * `disk_free_limit.absolute` writes it (`'50MB'`, `'2GiB'`). Default 50 MB, as RabbitMQ's.
   */
  readonly freeLimit?: number | string;
  /**
   * The limit as a multiple of the machine's memory (its cgroup limit when lower): RabbitMQ's
   * `disk_free_limit.relative`, `{mem_relative, 1.0}`. Wins over `freeLimit`.
   */
  readonly memRelative?: number;
  /** How often the free space is read, in ms (default 1000). */
  readonly intervalMs?: number;
  /** Reads the free space in bytes (default: `statfs` of `dir`, the blocks a user may take). */
  readonly read?: () => number;
  /** The machine's memory, in bytes, for `memRelative` (default: as the memory alarm reads it). */
  readonly total?: number;
}

/** RabbitMQ's default `disk_free_limit`: 50 MB. */
const DEFAULT_FREE_LIMIT = 50_000_000;
const DEFAULT_INTERVAL_MS = 1000;

/** The free space limit in bytes that `options` give. */
export function freeLimit(options: Omit<DiskAlarmOptions, 'dir'>): number {
  const { memRelative, freeLimit: given } = options;
  if (memRelative !== undefined) {
    if (typeof memRelative !== 'number' || !(memRelative >= 0) || !Number.isFinite(memRelative)) {
      throw new RangeError(`disk.memRelative must be a number >= 0, got ${String(memRelative)}`);
    }
    return Math.floor((options.total ?? machineMemory()) * memRelative);
  }
  if (given === undefined) return DEFAULT_FREE_LIMIT;
  const bytes = typeof given === 'string' ? parseBytes(given) : given;
  if (bytes === undefined || !Number.isSafeInteger(bytes) || bytes < 0) {
    throw new RangeError(
      `disk.freeLimit must be bytes or an amount such as '50MB' or '1GiB', got ${JSON.stringify(given)}`,
    );
  }
  return bytes;
}

/** The free space of the file system holding `dir`. */
function freeSpace(dir: string): number {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/** The disk alarm `options` describe. */
export function diskAlarm(options: DiskAlarmOptions): WatchedResource {
  const limit = freeLimit(options);
  const { dir } = options;
  return {
    resource: 'disk',
    limit,
    intervalMs: checkInterval('disk', options.intervalMs ?? DEFAULT_INTERVAL_MS),
    read: options.read ?? (() => freeSpace(dir)),
    raises: (free) => free < limit,
    describe: (free) => ({ resource: 'disk', free, limit }),
  };
}
