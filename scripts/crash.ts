/**
 * The long crash loop:
 * `npm run crash -- --kills 1000 [--seed 1] [--policy always|interval|both] [--jobs 1]`.
 * The kills are split evenly over the policies and, per policy, over `jobs` loops run side by
 * side (each on its own directory, with seed `seed + i`): a loop mostly waits for its worker.
 * Kills the worker of `test/support/crash-loop` with SIGKILL at seeded random moments, checks
 * every reopen, and prints kills, resolved publishes checked, losses, corrupt deliveries, kills
 * during a declare or delete and reopen times. Exits with 1 on the first violation, printing its seed and trace.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type CrashLoopResult, crashLoop } from '../test/support/crash-loop/harness.js';
import type { PolicyName } from '../test/support/crash-loop/workload.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    policy: { type: 'string', default: 'both' },
    jobs: { type: 'string', default: '1' },
  },
});
const kills = Number(values.kills);
const seed = Number(values.seed);
if (!Number.isSafeInteger(kills) || kills < 1)
  throw new RangeError('--kills must be a positive integer');
const jobs = Number(values.jobs);
if (!Number.isSafeInteger(jobs) || jobs < 1)
  throw new RangeError('--jobs must be a positive integer');
const policies: PolicyName[] =
  values.policy === 'both' ? ['always', 'interval'] : [values.policy as PolicyName];
const loops = policies.flatMap((policy) => Array.from({ length: jobs }, () => policy));

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mqlite-crash-loop-'));
const total: CrashLoopResult = {
  kills: 0,
  earlyKills: 0,
  resolvedChecked: 0,
  losses: 0,
  corrupt: 0,
  structuralKills: 0,
  delayedTwice: 0,
  tornCut: 0,
  deadLettered: 0,
  deadLettersChecked: 0,
  deadLetterDuplicates: 0,
  reopenMs: [],
};
const started = performance.now();
try {
  const results = await Promise.all(
    loops.map((policy, i) => {
      const share = Math.floor(kills / loops.length) + (i < kills % loops.length ? 1 : 0);
      return crashLoop({
        dir: path.join(root, `${policy}-${i}`),
        policy,
        seed: seed + i,
        kills: share,
        // What a loop has checked so far, so a run cut short still says what it found.
        onRun: (run, so) => {
          if (run % 25 !== 0) return;
          process.stderr.write(
            `${policy} #${i}: ${run}/${share} kills, ${so.resolvedChecked} resolved checked, ${so.losses} lost, ${so.delayedTwice} delayed routed twice, ${so.deadLettersChecked} dead letters checked\n`,
          );
        },
      });
    }),
  );
  for (const result of results) {
    total.kills += result.kills;
    total.earlyKills += result.earlyKills;
    total.resolvedChecked += result.resolvedChecked;
    total.losses += result.losses;
    total.corrupt += result.corrupt;
    total.structuralKills += result.structuralKills;
    total.delayedTwice += result.delayedTwice;
    total.tornCut += result.tornCut;
    total.deadLettered += result.deadLettered;
    total.deadLettersChecked += result.deadLettersChecked;
    total.deadLetterDuplicates += result.deadLetterDuplicates;
    total.reopenMs.push(...result.reopenMs);
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
const sorted = total.reopenMs.sort((a, b) => a - b);
console.log(`policies                   ${policies.join(', ')} (seed ${seed}, ${jobs} per policy)`);
console.log(`kills                      ${total.kills}`);
console.log(`resolved publishes checked ${total.resolvedChecked}`);
console.log(`losses                     ${total.losses}`);
console.log(`corrupt deliveries         ${total.corrupt}`);
console.log(`kills in declare or delete ${total.structuralKills}`);
console.log(`delayed routed twice       ${total.delayedTwice} (routed at a kill, again after it)`);
console.log(`torn last writes cut       ${total.tornCut}`);
console.log(
  `quorum dead-letterings     ${total.deadLettered} (rejected or past the delivery limit)`,
);
console.log(`dead letters checked       ${total.deadLettersChecked} (in the target at a check)`);
console.log(
  `dead letters found again   ${total.deadLetterDuplicates} (at-least-once, after a kill)`,
);
console.log(
  `reopen p50 / p99           ${percentile(sorted, 50).toFixed(1)} ms / ${percentile(sorted, 99).toFixed(1)} ms`,
);
console.log(`wall time                  ${((performance.now() - started) / 1000).toFixed(0)} s`);
