const amqplib = require('amqplib');
const { ManualClock } = require('mqlite/testing');
const { startBroker } = require('mqlite/testing/server');
const { placeOrder } = require('./orders');

/** The next message of `queue` on the broker at `url`, parsed, or null. */
async function nextOrder(url, queue) {
  const connection = await amqplib.connect(url);
  try {
    const message = await (await connection.createChannel()).get(queue, { noAck: true });
    return message ? JSON.parse(message.content.toString()) : null;
  } finally {
    await connection.close();
  }
}

describe('placeOrder, against the broker of the run', () => {
  test('sends the order as JSON', async () => {
    await placeOrder('orders-json', { id: 1, item: 'tea' });
    expect(await nextOrder(process.env.AMQP_URL, 'orders-json')).toEqual({ id: 1, item: 'tea' });
  });
});

describe('a fresh broker per test, when a test must see no other queue', () => {
  let rabbit;
  beforeEach(async () => {
    rabbit = await startBroker({ clock: true });
  });
  afterEach(async () => {
    await rabbit.stop();
  });

  test('starts empty', async () => {
    await placeOrder('mine', { id: 2, item: 'coffee' }, { url: rabbit.getAmqpUrl() });
    // orders-json, declared by the test above on the run's broker, is not here.
    expect(rabbit.broker.queues().map((q) => q.name)).toEqual(['mine']);
  });

  test('an order left unread expires on the broker clock, without waiting', async () => {
    expect(rabbit.clock).toBeInstanceOf(ManualClock);
    await placeOrder(
      'short-lived',
      { id: 3, item: 'ice' },
      {
        url: rabbit.getAmqpUrl(),
        expiresInMs: 60_000,
      },
    );
    rabbit.clock.advance(59_999);
    expect(rabbit.broker.queues().find((q) => q.name === 'short-lived').messages).toBe(1);
    rabbit.clock.advance(1);
    expect(await nextOrder(rabbit.getAmqpUrl(), 'short-lived')).toBeNull();
  });
});
