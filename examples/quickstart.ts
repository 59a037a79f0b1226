/**
 * The three queue kinds on the embedded memory default: a stream read by two independent
 * consumers, a priority queue, and a last-value queue. `npm start` runs this file.
 */
import { Broker, type Message } from 'mqlite';

const broker = await Broker.open();

// --- StreamQueue: an append-only log; every consumer reads it from its own offset. ---
const events = await broker.queue('events', { arguments: { 'x-queue-type': 'stream' } });
for (const name of ['signup', 'login', 'purchase']) await events.publish(name);

const fromStart: string[] = [];
const lastTwo: string[] = [];
const sub1 = await events.subscribe(
  { prefetch: 10, args: { 'x-stream-offset': 'first' } },
  (msg: Message) => {
    fromStart.push(`${msg.properties.headers?.['x-stream-offset']}:${msg.bodyString()}`);
  },
);
const sub2 = await events.subscribe({ prefetch: 10, args: { 'x-stream-offset': -2 } }, (msg) => {
  lastTwo.push(msg.bodyString());
});
await events.publish('logout');
await new Promise((resolve) => setImmediate(resolve));
console.log('stream, from the first offset:', fromStart.join(' '));
console.log('stream, the last two and on:  ', lastTwo.join(' '));
await sub1.cancel();
await sub2.cancel();

// --- PriorityQueue: higher priorities first, FIFO within a level. ---
const jobs = await broker.queue('jobs', { arguments: { 'x-max-priority': 9 } });
await jobs.publish('send newsletter', { priority: 1 });
await jobs.publish('reset password', { priority: 9 });
await jobs.publish('resize avatar', { priority: 5 });
const order: string[] = [];
for (let msg = await jobs.get(); msg; msg = await jobs.get()) order.push(msg.bodyString());
console.log('priority queue delivers:      ', order.join(' > '));

// --- LastValueQueue: a newer value of a key replaces the older one. ---
const prices = await broker.queue('prices', { arguments: { 'qpid.last_value_queue': true } });
const quote = (symbol: string, price: number) =>
  prices.publish({ symbol, price }, { headers: { 'qpid.LVQ_key': symbol } });
await quote('ACME', 101);
await quote('GLOBEX', 55);
await quote('ACME', 102);
await quote('ACME', 103);
const latest: string[] = [];
for (let msg = await prices.get(); msg; msg = await prices.get()) {
  const { symbol, price } = msg.json<{ symbol: string; price: number }>();
  latest.push(`${symbol}=${price}`);
}
console.log('last-value queue holds:       ', latest.join(' '));

console.log(
  'queues:',
  broker
    .queues()
    .map((q) => `${q.name} (${q.kind}, ${q.messages} messages)`)
    .join(', '),
);
await broker.close();
