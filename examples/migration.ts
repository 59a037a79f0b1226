/**
 * Moving to a real broker: one application module, typed against `AMQPSessionLike` of
 * `@cloudamqp/amqp-client`, runs unchanged on mqlite (in tests, or in one process) and on
 * LavinMQ or RabbitMQ. This script runs it on mqlite, and also on the broker `AMQP_URL` names
 * when it is set (e.g. `AMQP_URL=amqp://guest:guest@localhost npx tsx examples/migration.ts`).
 *
 * Run: npx tsx examples/migration.ts
 */
import { AMQPSession, type AMQPSessionLike } from '@cloudamqp/amqp-client';
import { Broker } from 'mqlite';

// ---- The application module: knows only AMQPSessionLike -------------------------------------

/** Orders go out on a topic exchange; a billing worker takes the paid ones from its queue. */
async function orderService(session: AMQPSessionLike, prefix: string) {
  const orders = await session.topicExchange(`${prefix}.orders`, { durable: false });
  const billing = await session.queue(`${prefix}.billing`, { durable: false });
  await billing.bind(`${prefix}.orders`, 'order.paid.*');
  return {
    placeOrder: (id: string, status: 'paid' | 'pending', region: string) =>
      orders.publish(JSON.stringify({ id }), { routingKey: `order.${status}.${region}` }),
    billNext: async () => {
      const msg = await billing.consumeOne({ timeout: 5000 });
      return (JSON.parse(msg.bodyString() ?? '{}') as { id: string }).id;
    },
  };
}

async function demo(label: string, session: AMQPSessionLike) {
  const prefix = `migration-${process.pid}`;
  const service = await orderService(session, prefix);
  await service.placeOrder('o-1', 'pending', 'eu');
  await service.placeOrder('o-2', 'paid', 'eu');
  await service.placeOrder('o-3', 'paid', 'us');
  console.log(`${label}: billed ${await service.billNext()}, then ${await service.billNext()}`);
  return prefix;
}

// ---- In tests, or in one process: mqlite --------------------------------------------------------

{
  await using broker = await Broker.open();
  await demo('mqlite', broker);
}

// ---- In production: the same module on a real broker ---------------------------------------

const url = process.env.AMQP_URL;
if (url) {
  const session = await AMQPSession.connect(url, { logger: null });
  try {
    const prefix = await demo(`broker at ${new URL(url).host}`, session);
    await (await session.queue(`${prefix}.billing`, { durable: false })).delete();
    await (await session.exchange(`${prefix}.orders`, 'topic', { durable: false })).delete();
  } finally {
    await session.stop();
  }
} else {
  console.log('set AMQP_URL to run the same module against LavinMQ or RabbitMQ too');
}
