import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Two cores: more workers only add scheduling noise to the crash and parity tests.
    maxWorkers: 2,
  },
});
