// The application under test: it reads its broker's URL from AMQP_URL, as in production.
const amqplib = require('amqplib');

/** Sends `order` as JSON to `queue`, confirmed; with `expiresInMs`, it expires unread by then. */
async function placeOrder(queue, order, { url = process.env.AMQP_URL, expiresInMs } = {}) {
  const connection = await amqplib.connect(url ?? 'amqp://localhost');
  try {
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true });
    const expiration = expiresInMs === undefined ? {} : { expiration: String(expiresInMs) };
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(order)), {
      persistent: true,
      ...expiration,
    });
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}

module.exports = { placeOrder };
