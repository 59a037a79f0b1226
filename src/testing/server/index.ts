/**
 * mqlite/testing/server: a broker served over AMQP for tests, started in one call, with faults a
 * test injects. An entry of its own: it loads the AMQP server, which mqlite/testing does not.
 */
export {
  type ConnectionInfo,
  type ConnectionMatch,
  type Refusal,
  ServerFaults,
} from '../../server/faults.js';
export {
  brokerGlobalSetup,
  brokerGlobalTeardown,
  type GlobalSetupOptions,
} from './global-setup.js';
export {
  MqliteContainer,
  type StartBrokerOptions,
  type StartedBroker,
  startBroker,
} from './started-broker.js';
