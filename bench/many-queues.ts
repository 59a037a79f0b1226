/**
 * Many durable queues on fs storage, at 1,000, 10,000 and 100,000 queues (each size in a process
 * of its own): declaring the classic queues one after the other (one message published to each),
 * reopening the broker that holds them, and the file descriptors the process holds meanwhile,
 * which the adapter's cache bounds (`maxOpenFiles`, default 128) whatever the number of queues.
 * The cost per queue of each size shows whether it grows with the number of queues. Writes are not
 * fsynced (`fsync: 'never'`): a durable declare waits for its fsync round, so under another
 * policy the figure would be the disk's latency.
 *
 * Standalone: `node --expose-gc --import tsx bench/many-queues.ts [queues]` (every size, or the
 * one given; `BENCH_SCALE=0.1` divides the sizes by ten).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../src/broker/broker.js';
import { fsStorage } from '../src/storage/fs/index.js';
import { isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

/** The sizes by name; the names stay the same at any scale (a smoke run's parent reads them). */
const SIZES: Record<string, number> = { '1k': 1000, '10k': 10_000, '100k': 100_000 };

/** Descriptors this process has open (Linux), or NaN elsewhere. */
function openDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return Number.NaN;
  }
}

/**
 * The most descriptors open above `base` while `work` runs, sampled between its steps (the
 * adapter's file operations are synchronous, so a sample never falls inside one).
 */
async function mostDescriptors(base: number, work: () => Promise<void>): Promise<number> {
  let most = openDescriptors() - base;
  const sample = setInterval(() => {
    most = Math.max(most, openDescriptors() - base);
  }, 50);
  try {
    await work();
  } finally {
    clearInterval(sample);
  }
  return Math.max(most, openDescriptors() - base);
}

/** Wall time and this process's CPU time (user and system) since `from`, in ms. */
function elapsed(from: { wall: number; cpu: NodeJS.CpuUsage }): { wall: number; cpu: number } {
  const cpu = process.cpuUsage(from.cpu);
  return { wall: performance.now() - from.wall, cpu: (cpu.user + cpu.system) / 1000 };
}

const now = () => ({ wall: performance.now(), cpu: process.cpuUsage() });

/**
 * Costs per queue: wall time, and CPU time, which is what carries on a shared machine (a process
 * waiting for a core is not slower code).
 */
const perQueue = ({ wall, cpu }: { wall: number; cpu: number }, queues: number) =>
  `${(wall / 1000).toFixed(1)} s, ${((wall * 1000) / queues).toFixed(0)} µs per queue (CPU ${((cpu * 1000) / queues).toFixed(0)} µs)`;

/** Progress on stderr every tenth of a large size, so a run cut short still tells its trend. */
function progress(done: number, queues: number, since: { wall: number; cpu: number }): void {
  if (queues < 10_000 || done % (queues / 10) !== 0) return;
  console.error(`  declared ${done} of ${queues}: ${perQueue(since, done)}`);
}

async function measure(queues: number): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mqlite-bench-queues-'));
  const storage = () => fsStorage({ dir, fsync: 'never' });
  try {
    const before = openDescriptors();
    let start = now();
    const declaring = await mostDescriptors(before, async () => {
      const broker = await Broker.open({ storage: storage() });
      for (let i = 0; i < queues; i++) {
        const queue = await broker.queue(`q-${i}`, { durable: true });
        await queue.publish('x'.repeat(100), { deliveryMode: 2 });
        progress(i + 1, queues, elapsed(start));
      }
      await broker.close();
    });
    const declare = elapsed(start);

    start = now();
    let reopen = { wall: 0, cpu: 0 };
    let broker: Broker | undefined;
    const reopening = await mostDescriptors(before, async () => {
      broker = await Broker.open({ storage: storage() });
      reopen = elapsed(start);
    });
    const listed = await broker!.queues();
    const held = listed.reduce((sum, queue) => sum + queue.messages, 0);
    await broker!.close();
    if (listed.length !== queues || held !== queues) {
      throw new Error(`reopened ${listed.length} queues holding ${held} messages`);
    }
    return [
      {
        name: `declare ${queues} durable queues and publish one message to each (fs, no fsync)`,
        opsPerSec: (queues / declare.wall) * 1000,
        note: `${perQueue(declare, queues)}; at most ${declaring} descriptors open`,
      },
      {
        name: `reopen a broker of ${queues} durable queues`,
        opsPerSec: (queues / reopen.wall) * 1000,
        note: `${perQueue(reopen, queues)}; at most ${reopening} descriptors open`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One process per size (see bench/index.ts): a size never runs on the heap another left. */
export const sections: Record<string, () => Promise<BenchResult[]>> = Object.fromEntries(
  Object.entries(SIZES).map(([name, queues]) => [name, () => measure(scaled(queues))]),
);

export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const queues of Object.values(SIZES)) results.push(...(await measure(scaled(queues))));
  return results;
}

if (isMain(import.meta.url)) {
  const only = process.argv[2];
  printResults(only === undefined ? await run() : await measure(Number(only)));
}
