/**
 * Shared benchmark helpers: timing with warm-up and best-of-N, and the standalone-run check.
 * Figures are wall-clock throughput on the machine that runs them; compare only figures taken in
 * the same run.
 */
import { pathToFileURL } from 'node:url';
import type { BenchResult } from './types.js';

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * A smoke run (`npm run bench -- --smoke`, as CI runs it): every module once at a tiny size, to
 * prove it runs; its figures mean nothing. It starts and stops no broker.
 */
export const SMOKE = process.env.BENCH_SMOKE === '1';

/**
 * Port of the LavinMQ the peer rows compare with (`LAVINMQ_PORT`; 5680, where CI starts it with
 * `../shared/lavinmq/start 5680`).
 */
export const LAVINMQ_PORT = Number(process.env.LAVINMQ_PORT ?? 5680);

/** The factor on message counts: `BENCH_SCALE` (0.1 for a quick run), or a thousandth in a smoke run. */
export const SCALE = SMOKE ? 0.001 : Number(process.env.BENCH_SCALE ?? 1);

/** `n` times `SCALE`, at least 1. */
export function scaled(n: number): number {
  return Math.max(1, Math.round(n * SCALE));
}

/**
 * Runs `fn` (which performs `ops` operations) `rounds` times after an untimed `setup` each round,
 * and returns the best throughput in ops/s. The best round is the one least disturbed by the
 * other process on a shared machine.
 */
export async function bestOf(
  ops: number,
  fn: () => unknown,
  options: { rounds?: number; setup?: () => unknown } = {},
): Promise<number> {
  const rounds = options.rounds ?? 5;
  let bestMs = Number.POSITIVE_INFINITY;
  for (let round = 0; round < rounds; round++) {
    await options.setup?.();
    gc?.();
    const start = performance.now();
    await fn();
    bestMs = Math.min(bestMs, performance.now() - start);
  }
  return (ops / bestMs) * 1000;
}

/**
 * Runs each of `measures` once per round, taking turns, for `rounds` rounds, and returns the best
 * figure of each, in order. Measures that take turns see the same spells of the machine's load,
 * so figures meant to be compared (a queue and its limit, kinds of replay) stay comparable.
 */
export async function bestInTurns(
  rounds: number,
  measures: Array<(round: number) => Promise<number>>,
): Promise<number[]> {
  const best = measures.map(() => 0);
  for (let round = 0; round < rounds; round++) {
    for (const [i, measure] of measures.entries()) {
      best[i] = Math.max(best[i]!, await measure(round));
    }
  }
  return best;
}

/**
 * Publishes `n` messages as a confirming publisher with a sliding window does: `publish(i)` in
 * batches of `batch`, each batch followed by a turn of the event loop (where a real publisher
 * waits for its socket) or, once `window` messages are unconfirmed, by a wait for the confirms of
 * the oldest batch. Under group commit the publisher so goes on while an fsync runs, as over a
 * channel in confirm mode. A queue hands out one confirm promise per storage log and tick, so a
 * batch holds a few distinct ones; `publish` may return undefined for no confirm.
 */
export async function publishWindowed(
  n: number,
  publish: (i: number) => Promise<void> | undefined,
  { batch = 1000, window }: { batch?: number; window: number },
): Promise<void> {
  const unconfirmed: Promise<unknown>[] = [];
  const confirms = new Set<Promise<void>>();
  const batches = Math.max(1, Math.floor(window / batch));
  for (let i = 0; i < n; i += batch) {
    const end = Math.min(n, i + batch);
    let last: Promise<void> | undefined;
    for (let j = i; j < end; j++) {
      const confirm = publish(j);
      // Consecutive publishes to one log share a promise: skip the set for those.
      if (confirm !== last && confirm !== undefined) confirms.add((last = confirm));
    }
    unconfirmed.push(confirms.size === 1 ? last! : Promise.all(confirms));
    confirms.clear();
    if (unconfirmed.length >= batches) await unconfirmed.shift();
    else await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(unconfirmed);
}

/**
 * Heap plus array-buffer bytes in use after a full GC; undefined without `--expose-gc`. One
 * forced GC is not enough: what the last tasks still held becomes garbage once the event loop
 * has turned, and array-buffer memory is given back on a background task after the GC.
 */
export async function memoryInUse(): Promise<number | undefined> {
  if (!gc) return undefined;
  for (let turn = 0; turn < 2; turn++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** True when `moduleUrl` is the script node was started with (`npx tsx bench/x.ts`). */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && moduleUrl === pathToFileURL(process.argv[1]).href;
}

/** Prints results as a table, then the rows of BENCHMARKS.md's lead table they make. */
export function printResults(results: BenchResult[]): void {
  console.table(
    results.map((r) => ({
      benchmark: r.name,
      'ops/s': formatRate(r.opsPerSec),
      note: r.note ?? '',
    })),
  );
  const rows = targetRows(results);
  if (rows.length > 0) console.log(`\n${rows.join('\n')}\n`);
}

/** The heading of BENCHMARKS.md's lead table, whose rows `targetRows` makes. */
export const TARGET_TABLE_HEAD = [
  '| figure | target | this run | beside it in the same run | ratio |',
  '| --- | --- | ---: | --- | ---: |',
];

/**
 * One lead table row per target of `results`: the figure, its target, its value, the result it
 * is compared with and the ratio of the two. Rates and times are both held as ops/s, so the ratio
 * is the same division for both: a rate over the other's, or the other's time over this one's.
 */
export function targetRows(results: BenchResult[]): string[] {
  const byName = new Map(results.map((r) => [r.name, r]));
  return results.flatMap((r) =>
    (r.targets ?? []).map(({ target, beside }) => {
      const other = beside === undefined ? undefined : byName.get(beside);
      const peer =
        beside === undefined ? '—' : `${beside}: ${other ? formatValue(other) : 'not run'}`;
      const ratio = other ? `${(r.opsPerSec / other.opsPerSec).toPrecision(3)}×` : '—';
      return `| ${r.name} | ${target} | ${formatValue(r)} | ${peer} | ${ratio} |`;
    }),
  );
}

/** A figure as the lead table shows it: 12.3 M/s, 6.35 ms, 1.50 µs, 40.9 B, 580 KiB. */
export function formatValue(r: BenchResult): string {
  if (r.unit === 'bytes') {
    return r.opsPerSec < 1024
      ? `${r.opsPerSec.toFixed(1)} B`
      : `${(r.opsPerSec / 1024).toFixed(0)} KiB`;
  }
  if (r.unit === 'time') {
    const ms = 1000 / r.opsPerSec;
    return ms >= 0.1 ? `${ms.toPrecision(3)} ms` : `${(ms * 1000).toPrecision(3)} µs`;
  }
  return `${formatRate(r.opsPerSec)}/s`;
}

/** 12345678 → "12.3 M". */
export function formatRate(opsPerSec: number): string {
  if (!Number.isFinite(opsPerSec)) return '–';
  if (opsPerSec >= 1e6) return `${(opsPerSec / 1e6).toFixed(2)} M`;
  if (opsPerSec >= 1e3) return `${(opsPerSec / 1e3).toFixed(1)} k`;
  return opsPerSec.toFixed(1);
}
