/**
 * The parity suite: every scenario in `scenarios/` runs against every target in `targets.ts`, one
 * `describe` per target. A scenario restricted to other targets is reported as skipped with its
 * reason in the test name. A target that cannot be reached fails the run in CI (`CI` set) and is
 * skipped with the reason locally.
 */

import { describe, it } from 'vitest';
import { scenarioRun } from './context.js';
import { scenarios } from './scenarios/index.js';
import { targets } from './targets.js';

const availability = await Promise.all(targets.map((t) => t.unavailable()));

targets.forEach((target, i) => {
  const why = availability[i];
  if (why !== undefined) {
    if (process.env.CI && process.env.CI !== 'false') {
      describe(`parity on ${target.name}`, () => {
        it('reaches the target', () => {
          throw new Error(`${target.name} is unreachable in CI: ${why}`);
        });
      });
    } else {
      console.warn(`parity: skipping ${target.name}: ${why}`);
      describe.skip(`parity on ${target.name} (skipped: ${why})`, () => {
        it('all scenarios', () => {});
      });
    }
    return;
  }
  // Scenarios use their own session and throwaway names, so they run concurrently.
  describe.concurrent(`parity on ${target.name}`, () => {
    for (const scenario of scenarios) {
      const only = scenario.only;
      if (only && !only.targets.includes(target.name)) {
        it.skip(`${scenario.name} (only on ${only.targets.join(', ')}: ${only.reason})`, () => {});
        continue;
      }
      it(scenario.name, async () => {
        const session = await target.open();
        const run = scenarioRun(target, session);
        try {
          await scenario.run(session, run.ctx);
        } finally {
          try {
            await run.cleanup();
          } finally {
            await session.stop();
          }
        }
      });
    }
  });
});
