// The application under test: it reads its broker's URL from AMQP_URL, as in production.
import amqplib from 'amqplib';

/** Sends an order to the `orders` queue of `queue` (a name of the test's choosing). */
export async function placeOrder(queue: string, order: { id: number; item: string }) {
  const connection = await amqplib.connect(process.env.AMQP_URL ?? 'amqp://localhost');
  try {
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue(queue, { durable: true });
    channel.sendToQueue(queue, Buffer.from(JSON.stringify(order)), { persistent: true });
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}
