/**
 * Memory adapter throughput against the plain in-memory FIFOs a user could pick instead:
 * 1 M records of 100 bytes appended in batches of 1000 (one `sync()` per batch, as a publisher
 * awaiting confirms would) and read back sequentially with a cursor.
 *
 * Standalone: `npx tsx bench/storage-memory.ts`.
 */
import Denque from 'denque';
import { memoryStorage } from '../src/storage/memory.js';
import type { RecordCodec } from '../src/storage/types.js';
import { isMain, printResults, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const RECORDS = scaled(1_000_000);
const BATCH = 1000;
const ROUNDS = 5;
const TARGET_APPEND = 10e6;
const TARGET_READ = 20e6;

const codec: RecordCodec<Uint8Array> = {
  byteLength: (r) => r.byteLength,
  encode: (r) => r,
  decode: (b) => b,
};

/** A pool of distinct 100-byte records, cycled, so every peer stores the same references. */
const pool = Array.from({ length: 1024 }, (_, i) => new Uint8Array(100).fill(i & 0xff));

type Gc = (() => void) | undefined;
const gc = (globalThis as { gc?: Gc }).gc;

/** Best of ROUNDS: ops/s of `fn`, which performs RECORDS operations after an untimed `setup`. */
async function best(fn: () => Promise<void> | void, setup?: () => void): Promise<number> {
  let bestMs = Number.POSITIVE_INFINITY;
  for (let round = 0; round < ROUNDS; round++) {
    setup?.();
    gc?.();
    const start = performance.now();
    await fn();
    bestMs = Math.min(bestMs, performance.now() - start);
  }
  return (RECORDS / bestMs) * 1000;
}

async function memoryLog(): Promise<BenchResult[]> {
  const storage = memoryStorage();
  const ns = await storage.namespace('bench');
  let round = 0;
  const append = await best(async () => {
    const log = await ns.openLog(`append-${round++}`, codec);
    for (let i = 0; i < RECORDS; i += BATCH) {
      for (let j = i; j < i + BATCH; j++) log.append(pool[j & 1023]!, 1_700_000_000_000);
      await log.sync();
    }
    await ns.deleteLog(log.name);
  });
  const log = await ns.openLog('read', codec);
  for (let i = 0; i < RECORDS; i++) log.append(pool[i & 1023]!, 1_700_000_000_000);
  let sink = 0;
  const read = await best(() => {
    const cursor = log.cursor();
    while (cursor.next()) sink += cursor.record.byteLength;
  });
  await storage.close();
  if (sink === 0) throw new Error('nothing read');
  return [
    {
      name: 'memory log append (100 B, batches of 1000)',
      opsPerSec: append,
      targets: [{ target: `≥ ${TARGET_APPEND / 1e6} M/s`, beside: 'peer: array push' }],
    },
    {
      name: 'memory log cursor read (100 B)',
      opsPerSec: read,
      targets: [{ target: `≥ ${TARGET_READ / 1e6} M/s`, beside: 'peer: array iterate' }],
    },
  ];
}

async function plainArray(): Promise<BenchResult[]> {
  let arr: Uint8Array[] = [];
  const push = await best(() => {
    arr = [];
    for (let i = 0; i < RECORDS; i++) arr.push(pool[i & 1023]!);
  });
  let sink = 0;
  const iterate = await best(() => {
    for (let i = 0; i < arr.length; i++) sink += arr[i]!.byteLength;
  });
  if (sink === 0) throw new Error('nothing read');
  return [
    { name: 'peer: array push', opsPerSec: push },
    { name: 'peer: array iterate', opsPerSec: iterate },
  ];
}

async function denque(): Promise<BenchResult[]> {
  let queue = new Denque<Uint8Array>();
  const fill = () => {
    queue = new Denque<Uint8Array>();
    for (let i = 0; i < RECORDS; i++) queue.push(pool[i & 1023]!);
  };
  const push = await best(fill);
  let sink = 0;
  const shift = await best(() => {
    let r = queue.shift();
    while (r !== undefined) {
      sink += r.byteLength;
      r = queue.shift();
    }
  }, fill);
  if (sink === 0) throw new Error('nothing read');
  return [
    { name: 'peer: denque push', opsPerSec: push },
    { name: 'peer: denque shift', opsPerSec: shift },
  ];
}

/** Runs the memory storage benchmarks. */
export async function run(): Promise<BenchResult[]> {
  return [...(await memoryLog()), ...(await plainArray()), ...(await denque())];
}

if (isMain(import.meta.url)) printResults(await run());
