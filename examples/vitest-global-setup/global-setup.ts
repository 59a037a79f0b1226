// Starts one mqlite broker before the test files run and stops it after them.
import { brokerGlobalSetup } from 'mqlite/testing/server';

export default brokerGlobalSetup({ env: 'AMQP_URL' });
