/** One benchmark figure. */
export type BenchResult = {
  name: string;
  /** Operations a second; for `unit: 'bytes'`, bytes (not a rate). */
  opsPerSec: number;
  note?: string;
  /** How the figure reads in BENCHMARKS.md's lead table: a rate (the default), a time per operation, or bytes. */
  unit?: 'time' | 'bytes';
  /** The figure's targets, one lead table row each. */
  targets?: readonly Target[];
};

/** A target of a figure, and the peer or limit of the same run it is compared with. */
export type Target = {
  /** As the table shows it: '≥ 5 M/s', '< 1 ms', '≥ 0.7× raw'. */
  target: string;
  /** The name of the result measured beside this one in the same run; the ratio is taken to it. */
  beside?: string;
};
