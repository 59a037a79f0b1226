/**
 * Many durable queues on fs storage: declaring 100 000 classic queues one after the other (one
 * message published to each), reopening the broker that holds them, and the file descriptors
 * the process holds meanwhile, which the adapter's cache bounds (`maxOpenFiles`, default 128)
 * whatever the number of queues. Writes are not fsynced (`fsync: 'never'`): a durable declare
 * waits for its fsync round, so under another policy the figure would be the disk's latency.
 *
 * Standalone: `node --expose-gc --import tsx bench/many-queues.ts` (`BENCH_SCALE=0.1` for a
 * quick run).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Broker } from '../src/broker/broker.js';
import { fsStorage } from '../src/storage/fs/index.js';
import { isMain, printResults, SCALE } from './harness.js';
import type { BenchResult } from './types.js';

const QUEUES = Math.round(100_000 * SCALE);

/** Descriptors this process has open (Linux), or NaN elsewhere. */
function openDescriptors(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return Number.NaN;
  }
}

export async function run(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mqlite-bench-queues-'));
  const storage = () => fsStorage({ dir, fsync: 'never' });
  try {
    const before = openDescriptors();
    let most = 0;
    let start = performance.now();
    let broker = await Broker.open({ storage: storage() });
    for (let i = 0; i < QUEUES; i++) {
      const queue = await broker.queue(`q-${i}`, { durable: true });
      await queue.publish('x'.repeat(100), { deliveryMode: 2 });
      if (i % 1000 === 0) most = Math.max(most, openDescriptors() - before);
    }
    await broker.close();
    const declareMs = performance.now() - start;

    start = performance.now();
    broker = await Broker.open({ storage: storage() });
    const reopenMs = performance.now() - start;
    const afterReopen = openDescriptors() - before;
    const queues = await broker.queues();
    const held = queues.reduce((sum, queue) => sum + queue.messages, 0);
    if (queues.length !== QUEUES || held !== QUEUES) {
      throw new Error(`reopened ${queues.length} queues holding ${held} messages`);
    }
    await broker.close();

    const fds = `descriptors open: at most ${most} while declaring, ${afterReopen} after reopening`;
    return [
      {
        name: `declare ${QUEUES} durable queues and publish one message to each (fs, no fsync)`,
        opsPerSec: (QUEUES / declareMs) * 1000,
        note: `${(declareMs / 1000).toFixed(1)} s; ${fds}`,
      },
      {
        name: `reopen a broker of ${QUEUES} durable queues`,
        opsPerSec: 1000 / reopenMs,
        unit: 'time',
        note: `${(reopenMs / 1000).toFixed(1)} s, ${((reopenMs * 1000) / QUEUES).toFixed(0)} µs per queue`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printResults(await run());
