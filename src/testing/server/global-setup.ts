/**
 * A test runner's global setup: one broker for the whole run, its URL in an environment variable
 * the application reads, stopped by the returned teardown.
 */
import { type StartBrokerOptions, startBroker } from './started-broker.js';

/** Options of {@link brokerGlobalSetup}. */
export interface GlobalSetupOptions extends StartBrokerOptions {
  /** The environment variable given the broker's URL (default `AMQP_URL`). */
  env?: string;
}

/**
 * A Vitest `globalSetup` (its default export): starts one broker, puts its URL in
 * `process.env[env]` before the test files run, and returns the teardown that stops it.
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
    return async () => {
      await started.stop();
      delete process.env[env];
    };
  };
}
