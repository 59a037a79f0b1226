// Starts one mqlite broker before the test files run.
const { brokerGlobalSetup } = require('mqlite/testing/server');

module.exports = brokerGlobalSetup({ env: 'AMQP_URL' });
