// One broker for the whole run: the global setup starts it and puts its URL in AMQP_URL, which the
// test workers inherit; the global teardown stops it.
module.exports = {
  testEnvironment: 'node',
  globalSetup: './global-setup.js',
  globalTeardown: './global-teardown.js',
};
