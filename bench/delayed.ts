/**
 * Delayed messages: a million pending on a delayed exchange, beside the plain exchange in the same
 * run. It measures the publish rate into the delayed exchange and into a plain one, the memory a
 * pending message holds (on memory storage: the message and its index entry; on fs: the index
 * entry alone, the message staying on disk) beside a message held by a queue, and the time to
 * route each batch of 1000 as it falls due beside the time to publish 1000 through the plain
 * exchange. The broker runs on a manual clock: the batches fall due as it moves.
 *
 * Standalone: `node --expose-gc --import tsx bench/delayed.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Broker } from '../src/broker/broker.js';
import { fsStorage } from '../src/storage/fs/index.js';
import type { StorageAdapter } from '../src/storage/types.js';
import { ManualClock } from '../src/testing/index.js';
import { isMain, memoryInUse, printResults, publishWindowed, SCALE } from './harness.js';
import type { BenchResult } from './types.js';

const PENDING = Math.round(1_000_000 * SCALE);
const BATCH = 1000;
const BATCHES = PENDING / BATCH;
/** The delay between two batches falling due. */
const STEP_MS = 1000;
const BODY = Buffer.alloc(100, 'x');

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Measures on `storage`, or on the memory default when there is none. */
async function measure(label: string, storage?: StorageAdapter): Promise<BenchResult[]> {
  const clock = new ManualClock();
  const broker = await Broker.open({ clock, ...(storage && { storage }) });
  const persistent = storage?.supports.persistent === true;
  const properties = persistent ? { deliveryMode: 2 as const } : {};
  const delayed = await broker.exchange('later', 'x-delayed-message', {
    arguments: { 'x-delayed-type': 'direct' },
  });
  const plain = await broker.exchange('now', 'direct');
  const out = await broker.queue('out', { durable: true });
  await out.bind('later', 'k');
  await out.bind('now', 'k');

  const empty = await memoryInUse();
  let start = performance.now();
  await publishWindowed(
    PENDING,
    (i) =>
      delayed.publish(BODY, {
        routingKey: 'k',
        ...properties,
        headers: { 'x-delay': (1 + (i % BATCHES)) * STEP_MS },
      }),
    { window: 10_000 },
  );
  const delayedRate = (PENDING / (performance.now() - start)) * 1000;
  const pendingBytes = await memoryInUse();

  // Each step of the clock routes one batch into the queue; the time is until the queue holds it.
  const routeMs: number[] = [];
  for (let b = 1; b <= BATCHES; b++) {
    start = performance.now();
    clock.advance(STEP_MS);
    while (out.messageCount < b * BATCH) await turn();
    routeMs.push(performance.now() - start);
  }
  await out.purge();
  // The last batch is held until the queue stored it: settled a few turns after it shows there.
  const held = () => broker.exchanges().find((e) => e.name === 'later')?.delayed?.messages;
  for (const end = performance.now() + 30_000; held() !== 0 && performance.now() < end; ) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  if (held() !== 0) throw new Error(`the delayed exchange still holds ${held()}`);

  // The same batches through the plain exchange, timed alike: until the queue holds them.
  const emptied = await memoryInUse();
  start = performance.now();
  const publishMs: number[] = [];
  const confirms: Promise<void>[] = [];
  for (let b = 1; b <= BATCHES; b++) {
    const batchStart = performance.now();
    for (let i = 0; i < BATCH; i++) {
      confirms.push(plain.publish(BODY, { routingKey: 'k', ...properties }));
    }
    while (out.messageCount < b * BATCH) await turn();
    publishMs.push(performance.now() - batchStart);
    if (confirms.length >= 10_000) await Promise.all(confirms.splice(0));
  }
  await Promise.all(confirms);
  const plainRate = (PENDING / (performance.now() - start)) * 1000;
  const queuedBytes = await memoryInUse();
  await broker.close();

  const median = (ms: number[]) => ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)]!;
  const p99 = (ms: number[]) => ms.sort((a, b) => a - b)[Math.floor(ms.length * 0.99)]!;
  const plainName = `publish to a plain exchange (${label})`;
  const batchName = `publish 1000 through a plain exchange (${label})`;
  const queuedName = `memory per message held by a queue (${label})`;
  const results: BenchResult[] = [
    {
      name: `publish to a delayed exchange, ${PENDING} pending (${label})`,
      opsPerSec: delayedRate,
      targets: [{ target: '≥ 0.5× plain', beside: plainName }],
    },
    { name: plainName, opsPerSec: plainRate },
    {
      name: `route a batch of 1000 as it falls due, median (${label})`,
      opsPerSec: 1000 / median(routeMs),
      unit: 'time',
      note: `p99 ${p99(routeMs).toFixed(2)} ms, ${PENDING} pending at the start`,
      // On fs each message is read back from its log: a random read the plain publish does not do.
      targets: [{ target: '< 10 ms', beside: batchName }],
    },
    {
      name: batchName,
      opsPerSec: 1000 / median(publishMs),
      unit: 'time',
      note: `p99 ${p99(publishMs).toFixed(2)} ms`,
    },
  ];
  if (empty !== undefined && pendingBytes !== undefined) {
    results.push({
      name: `memory per pending delayed message (${label})`,
      opsPerSec: (pendingBytes - empty) / PENDING,
      unit: 'bytes',
      note: `${((pendingBytes - empty) / 2 ** 20).toFixed(1)} MiB for ${PENDING}`,
      // On memory a pending message is an object of its own (a queue packs its messages); on fs
      // only its index entry stays in memory.
      targets: [{ target: persistent ? '≤ 64 B' : '≤ 512 B', beside: queuedName }],
    });
  }
  if (emptied !== undefined && queuedBytes !== undefined) {
    results.push({
      name: queuedName,
      opsPerSec: (queuedBytes - emptied) / PENDING,
      unit: 'bytes',
    });
  }
  return results;
}

export const sections = {
  memory: () => measure('memory'),
  async fs(): Promise<BenchResult[]> {
    const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-bench-delayed-'));
    try {
      return await measure(
        'fs, fsync every 100 ms',
        fsStorage({ dir, fsync: { intervalMs: 100 } }),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

if (isMain(import.meta.url)) {
  printResults([...(await sections.memory()), ...(await sections.fs())]);
}
