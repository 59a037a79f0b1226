import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Stops a run at once, with how to run without them, when its brokers do not answer.
    globalSetup: ['./test/support/brokers-answer.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    // A limit for a hang, not a speed check: on a loaded 2-core machine the volume and property
    // tests (a stream of 50,000 messages replayed by eight filters, the crash writers) take
    // minutes where they take seconds alone.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Two cores: more workers only add scheduling noise to the crash and parity tests.
    maxWorkers: 2,
  },
});
