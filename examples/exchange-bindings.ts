/**
 * Exchange-to-exchange bindings and sender-selected distribution, as on RabbitMQ: a topic
 * exchange hands the European orders to a fanout exchange bound to it (`exchange.bind`), and a
 * publisher copies one message to more routing keys with the `CC` and `BCC` headers.
 */
import { Broker, type BrokerQueue } from 'mqlite';

async function bodies(queue: BrokerQueue): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString());
  return out;
}

await using broker = await Broker.open();
const orders = await broker.topicExchange('orders');
const europe = await broker.fanoutExchange('orders.europe');
await europe.bind(orders, 'orders.eu.#');

const all = await (await broker.queue('all-orders')).bind(orders, 'orders.#');
const billing = await (await broker.queue('eu-billing')).bind(europe);
const shipping = await (await broker.queue('eu-shipping')).bind(europe);

for (const key of ['orders.eu.fr', 'orders.us.ny', 'orders.eu.de']) {
  await orders.publish(key, { routingKey: key });
}
console.log('all-orders:', await bodies(all));
console.log('eu-billing:', await bodies(billing));
console.log('eu-shipping:', await bodies(shipping));

// CC and BCC: one publish, three routing keys; BCC is removed before delivery.
const mail = await broker.directExchange('mail');
const inboxes: Record<string, BrokerQueue> = {};
for (const user of ['ann', 'bob', 'eve']) {
  inboxes[user] = await (await broker.queue(`inbox.${user}`)).bind(mail, user);
}
await mail.publish('lunch?', { routingKey: 'ann', headers: { CC: ['bob'], BCC: ['eve'] } });
for (const [user, inbox] of Object.entries(inboxes)) {
  const m = await inbox.get();
  console.log(
    `${user} got '${m?.bodyString()}', CC ${JSON.stringify(m?.properties.headers?.CC)}, BCC ${JSON.stringify(m?.properties.headers?.BCC)}`,
  );
}
