/**
 * An amqplib application on quorum queues, tested unchanged against mqlite's AMQP server: urgent
 * orders (priority above 4) go out two for each normal one, and failed orders are dead-lettered
 * `at-least-once`. The dead-letter exchange does not exist yet when the first order fails, so the
 * dead letter stays in the orders queue, counted against its length limit (once the queue is full
 * the next publish is refused), until the operator declares it; the broker tries again 180 s
 * later, on a manual clock here. A queue that refused a publish takes them again once it is back
 * to 80% of its limit, as RabbitMQ's quorum queues do.
 */
import amqplib from 'amqplib';
import { Broker } from 'mqlite';
import { listen } from 'mqlite/server';
import { ManualClock } from 'mqlite/testing';

/** The application module: it declares its queue and publishes and takes orders. */
async function orders(url: string) {
  const connection = await amqplib.connect(url);
  const channel = await connection.createConfirmChannel();
  await channel.assertQueue('orders', {
    arguments: {
      'x-queue-type': 'quorum',
      'x-max-length': 2,
      'x-overflow': 'reject-publish',
      'x-dead-letter-strategy': 'at-least-once',
      'x-dead-letter-exchange': 'orders.dlx',
    },
  });
  return {
    /** Publishes an order; resolves with whether the broker took it. */
    async submit(order: string, priority?: number) {
      return new Promise<boolean>((resolve) => {
        const options = priority === undefined ? {} : { priority };
        channel.sendToQueue('orders', Buffer.from(order), options, (error) => resolve(!error));
      });
    },
    /** Takes the next order: `fail` rejects it (dead-lettered), otherwise it is acked. */
    async take(fail = false) {
      const message = await channel.get('orders');
      if (!message) return null;
      if (fail) channel.reject(message, false);
      else channel.ack(message);
      return message.content.toString();
    },
    close: () => connection.close(),
  };
}

// The test: the same module, pointed at mqlite.
const clock = new ManualClock(Date.UTC(2026, 0, 1));
const broker = await Broker.open({ clock });
const server = await listen(broker, { port: 0 });
const app = await orders(server.url);

for (const [order, priority] of [
  ['order 1', undefined],
  ['order 2', undefined],
  ['urgent 3', 9],
] as const) {
  await app.submit(order, priority);
}
console.log('taken:', await app.take(), await app.take(), await app.take());

await app.submit('order 4');
console.log('failed:', await app.take(true));
console.log(
  'queue holds the dead letter, takes:',
  await app.submit('order 5'),
  await app.submit('order 6'),
);
console.log('and refuses:', !(await app.submit('order 7')));

// The operator adds the dead-letter exchange and queue; the broker tries again after 180 s.
await broker.exchange('orders.dlx', 'fanout');
const failed = await broker.queue('orders.failed', { arguments: { 'x-queue-type': 'quorum' } });
await failed.bind('orders.dlx');
clock.advance(180_000);
for (const deadline = Date.now() + 10_000; failed.messageCount === 0 && Date.now() < deadline; ) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
const dead = await failed.get();
console.log(
  'dead-lettered:',
  dead?.bodyString(),
  dead?.properties.headers?.['x-first-death-reason'],
);
// A full quorum queue takes publishes again once it is back to 80% of its limit: here, one order.
console.log('still full:', !(await app.submit('order 7')));
console.log('taken:', await app.take());
console.log('room again:', await app.submit('order 7'));

await app.close();
await server.close();
await broker.close();
