/**
 * The parity suite: every scenario in `scenarios/` runs against every target in `targets.ts`, one
 * `describe` per target. A scenario that follows LavinMQ or Qpid on purpose runs only on the
 * targets it names, and says so, with the reason, in its test name.
 *
 * A target that cannot be reached fails the run: the suite compares against a live broker on
 * every machine and in CI. `PARITY_TARGETS=mqlite` (a comma list of target names) runs fewer
 * targets on purpose, for a machine without a broker.
 */

import { describe, expect, it } from 'vitest';
import { scenarioRun } from './context.js';
import { scenarios } from './scenarios/index.js';
import { lavinmqUrl, targets } from './targets.js';

const chosen = process.env.PARITY_TARGETS?.split(',').map((name) => name.trim());
const selected = chosen ? targets.filter((t) => chosen.includes(t.name)) : targets;

if (!lavinmqUrl && !chosen) {
  // CI always sets it (.ci/run starts one): there the suite never runs without LavinMQ.
  describe('parity on lavinmq', () => {
    it.skipIf(!process.env.CI)(
      'skipped: set LAVINMQ_URL to a LavinMQ 2.9.1 (../shared/lavinmq/start [port] prints one)',
      () => {},
    );
    it.runIf(!!process.env.CI)('LAVINMQ_URL is set in CI', () => {
      expect(lavinmqUrl, 'CI runs the parity suite on LavinMQ too: set LAVINMQ_URL').toBeDefined();
    });
  });
}

for (const target of selected) {
  // Scenarios use their own session and throwaway names, so they run concurrently.
  describe.concurrent(`parity on ${target.name}`, () => {
    it('reaches the target', async () => {
      const why = await target.unavailable();
      expect(why, `${target.name} is unreachable: ${why}`).toBeUndefined();
    });
    for (const scenario of scenarios) {
      const only = scenario.only;
      if (only && !only.targets.includes(target.name)) continue;
      const restriction = only ? ` (only on ${only.targets.join(', ')}: ${only.reason})` : '';
      const differs = scenario.differsOn?.[target.name];
      if (differs !== undefined) {
        it.skip(`${scenario.name} (${target.name} differs from RabbitMQ here: ${differs})`);
        continue;
      }
      it(`${scenario.name}${restriction}`, async () => {
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
}
