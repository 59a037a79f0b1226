/**
 * A test runner's global setup: one broker for the whole run, its URL in an environment variable
 * the application reads, stopped by the returned teardown (Vitest) or by the global teardown
 * (Jest, which ignores what its global setup returns).
 */
import { type StartBrokerOptions, startBroker } from './started-broker.js';

/** Options of {@link brokerGlobalSetup}. */
export interface GlobalSetupOptions extends StartBrokerOptions {
  /** The environment variable given the broker's URL (default `AMQP_URL`). */
  env?: string;
}

/** Where the running broker's teardown waits for Jest's global teardown (another module). */
const TEARDOWN = Symbol.for('mqlite.testing.globalTeardown');
type Holder = { [TEARDOWN]?: () => Promise<void> };

/**
 * A global setup: starts one broker, puts its URL in `process.env[env]` before the test files
 * run, and returns the teardown that stops it. Vitest takes it as the default export of its
 * `globalSetup` file and calls the teardown; Jest takes it as its `globalSetup` module, with
 * {@link brokerGlobalTeardown} as `globalTeardown`.
 *
 * ```ts
 * // test/global-setup.ts, named in vitest.config.ts as `test.globalSetup`
 * import { brokerGlobalSetup } from 'mqlite/testing/server';
 * export default brokerGlobalSetup({ env: 'AMQP_URL' });
 * ```
 */
export function brokerGlobalSetup(
  options: GlobalSetupOptions = {},
): () => Promise<() => Promise<void>> {
  const { env = 'AMQP_URL', ...start } = options;
  return async () => {
    const started = await startBroker(start);
    process.env[env] = started.url;
    const teardown = async () => {
      delete (globalThis as Holder)[TEARDOWN];
      await started.stop();
      delete process.env[env];
    };
    (globalThis as Holder)[TEARDOWN] = teardown;
    return teardown;
  };
}

/**
 * Jest's `globalTeardown`: stops the broker that {@link brokerGlobalSetup} started in the same
 * run (Jest ignores what a global setup returns). Does nothing when none runs.
 *
 * ```js
 * // global-teardown.js, named in jest.config.js as globalTeardown
 * module.exports = require('mqlite/testing/server').brokerGlobalTeardown();
 * ```
 */
export function brokerGlobalTeardown(): () => Promise<void> {
  return async () => {
    await (globalThis as Holder)[TEARDOWN]?.();
  };
}
