// The test file of the default Jest project scripts/check-package.mjs builds around the packed
// tarball: CommonJS, loaded by Jest's module loader, which cannot require() an ES module.
const amqplib = require('amqplib');
const { Broker, MqliteError, NotFoundError } = require('mqlite');
const { listen } = require('mqlite/server');
const { ManualClock } = require('mqlite/testing');

test('a message TTL expires on a manual clock', async () => {
  const clock = new ManualClock(0);
  const broker = await Broker.open({ clock });
  const q = await broker.queue('reminders', { arguments: { 'x-message-ttl': 60_000 } });
  await q.publish('call back');
  clock.advance(60_000);
  expect(await q.get({ noAck: true })).toBeNull();
  await broker.close();
});

test('errors are recognisable by class and by code', async () => {
  const broker = await Broker.open();
  const error = await broker.queue('missing', { passive: true }).catch((e) => e);
  expect(error).toBeInstanceOf(NotFoundError);
  expect(error).toBeInstanceOf(MqliteError);
  expect(error.code).toBe('MQLITE_NOT_FOUND');
  await broker.close();
});

test('an AMQP client talks to the broker through mqlite/server', async () => {
  const broker = await Broker.open();
  const server = await listen(broker, { port: 0 });
  const connection = await amqplib.connect(server.url);
  const channel = await connection.createChannel();
  await channel.assertQueue('jobs');
  channel.sendToQueue('jobs', Buffer.from('job 1'));
  const got = await (await broker.queue('jobs')).consumeOne({ timeout: 5000 });
  expect(got.bodyString()).toBe('job 1');
  await connection.close();
  await server.close();
  await broker.close();
});
