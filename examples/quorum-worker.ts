/**
 * An amqplib worker on a quorum queue, tested unchanged against mqlite's AMQP server: its handler
 * fails on a poison message, which comes back with a growing `x-delivery-count` until the queue's
 * delivery limit sends it to a dead-letter queue, while good messages go through. The broker runs
 * on a manual clock, so the dead letter's `x-death` time is the same at every run.
 */
import amqplib from 'amqplib';
import { Broker } from 'mqlite';
import { listen } from 'mqlite/server';
import { ManualClock } from 'mqlite/testing';

/** The application module: a worker that processes orders, as it runs in production. */
async function orderWorker(url: string, log: (line: string) => void) {
  const connection = await amqplib.connect(url);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('orders.failed', { arguments: { 'x-queue-type': 'quorum' } });
  await channel.assertQueue('orders', {
    arguments: {
      'x-queue-type': 'quorum',
      'x-delivery-limit': 3,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'orders.failed',
    },
  });
  await channel.prefetch(1);
  await channel.consume('orders', (message) => {
    if (!message) return;
    const order = message.content.toString();
    const count = message.properties.headers?.['x-delivery-count'] ?? 0;
    if (order.includes('poison')) {
      log(`${order}: failed (x-delivery-count ${count})`);
      channel.nack(message, false, true);
    } else {
      log(`${order}: done`);
      channel.ack(message);
    }
  });
  return {
    async submit(order: string) {
      channel.sendToQueue('orders', Buffer.from(order), { persistent: true });
      await channel.waitForConfirms();
    },
    async nextFailed() {
      const message = await channel.get('orders.failed', { noAck: true });
      if (!message) return null;
      const death = message.properties.headers?.['x-death']?.[0];
      return `${message.content.toString()} (${death?.reason} from ${death?.queue}, ${death?.time?.value})`;
    },
    close: () => connection.close(),
  };
}

// The test: the same module, pointed at mqlite.
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const broker = await Broker.open({ clock });
const server = await listen(broker, { port: 0 });
const lines: string[] = [];
const worker = await orderWorker(server.url, (line) => lines.push(line));

await worker.submit('order 1');
await worker.submit('order 2 (poison)');
await worker.submit('order 3');

// Wait for the dead letter, polling with a deadline (the worker runs on its own).
let failed: string | null = null;
for (const deadline = Date.now() + 10_000; failed === null && Date.now() < deadline; ) {
  failed = await worker.nextFailed();
  if (failed === null) await new Promise((resolve) => setTimeout(resolve, 10));
}
for (const line of lines) console.log(line);
console.log('dead-lettered:', failed);

await worker.close();
await server.close();
await broker.close();
