/**
 * The crash loop in CI: a worker process works all five queue kinds (the quorum queue
 * dead-lettering `at-least-once`) and a delayed exchange on a data directory and is killed with SIGKILL at seeded random moments; after each kill the
 * directory is reopened and checked against everything the worker reported (see
 * test/support/crash-loop/harness.ts).
 * `npm run crash -- --kills N` runs the long version.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { crashLoop } from '../support/crash-loop/harness.js';
import type { PolicyName } from '../support/crash-loop/workload.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-crash-loop-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Kills per test: 6 tests, 204 kills in all. */
const KILLS = 34;
/**
 * A limit for a hang, not a speed check: five of these run side by side, and with two CPU hogs
 * beside them on two loaded cores (`stress-ng --cpu 2`) one took 526 s.
 */
const LOOP_TIMEOUT = 1_200_000;

describe('crash loop: SIGKILL at random moments loses nothing that resolved', () => {
  for (const policy of ['always', 'interval'] as PolicyName[]) {
    for (const seed of [11, 12, 13]) {
      test.concurrent(
        `fsync ${policy}, seed ${seed}: ${KILLS} kills`,
        async () => {
          const result = await crashLoop({
            dir: path.join(root, `${policy}-${seed}`),
            policy,
            seed,
            kills: KILLS,
          });
          expect(result.kills).toBe(KILLS);
          // Every kill after the worker was up came after a resolved publish: each checked one.
          expect(result.resolvedChecked).toBeGreaterThanOrEqual(KILLS - result.earlyKills);
          expect([result.losses, result.corrupt]).toEqual([0, 0]);
          // The quorum queue dead-lettered while being killed, at-least-once.
          expect(result.deadLettered).toBeGreaterThan(0);
        },
        LOOP_TIMEOUT,
      );
    }
  }
});
