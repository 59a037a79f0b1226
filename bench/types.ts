/** One benchmark figure. */
export type BenchResult = { name: string; opsPerSec: number; note?: string };
