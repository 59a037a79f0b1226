/**
 * Partitioned consumers: a consistent-hash exchange spreads orders over three partition queues by
 * customer, so one customer's events always land in one partition and are handled in order; each
 * partition has a single active consumer and a standby that takes over when it goes. Keys reach
 * the partitions LavinMQ would give them.
 *
 * Run: npx tsx examples/partitioned-consumers.ts
 */
import { Broker, type BrokerQueue } from 'mqlite';

await using broker = await Broker.open();
const orders = await broker.exchange('orders', 'x-consistent-hash');

const partitions: BrokerQueue[] = [];
for (const name of ['orders.p0', 'orders.p1', 'orders.p2']) {
  const partition = await broker.queue(name, { arguments: { 'x-single-active-consumer': true } });
  await partition.bind('orders', '100'); // the routing key is the weight: equal shares
  partitions.push(partition);
}

/** Who handled what, per partition: `worker: customer/event`. */
const log: Record<string, string[]> = {};
let handled = 0;
const workers = [];
for (const partition of partitions) {
  for (const worker of ['a', 'b']) {
    const name = `${partition.name}/${worker}`;
    workers.push(
      await partition.subscribe({ noAck: false }, async (message) => {
        (log[partition.name] ??= []).push(`${name}: ${message.bodyString()}`);
        handled++;
        await message.ack();
      }),
    );
  }
}

async function publishAll(events: string[]) {
  for (const customer of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank']) {
    for (const event of events)
      await orders.publish(`${customer}/${event}`, { routingKey: customer });
  }
}

async function settled(count: number) {
  while (handled < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

await publishAll(['created', 'paid']);
await settled(12);

// The active consumer of the first partition stops: its standby takes the partition over.
await workers[0]?.cancel();
await publishAll(['shipped']);
await settled(18);

for (const partition of partitions) {
  console.log(partition.name);
  for (const line of log[partition.name] ?? []) console.log(`  ${line}`);
}
