// Stops the broker of global-setup.js once every test file has run.
const { brokerGlobalTeardown } = require('mqlite/testing/server');

module.exports = brokerGlobalTeardown();
