/**
 * Time-based rules on a manual clock, the way a test suite exercises them without sleeping:
 * message TTL with dead-lettering, queue expiry, and stream retention by age.
 */
import { Broker } from 'mqlite';
import { ManualClock } from 'mqlite/testing';

const clock = new ManualClock();
const broker = await Broker.open({ clock });

// Message TTL: a minute later the message is gone and dead-lettered as `expired`.
const expired = await broker.queue('expired');
const orders = await broker.queue('orders', {
  arguments: {
    'x-message-ttl': 60_000,
    'x-dead-letter-exchange': '',
    'x-dead-letter-routing-key': 'expired',
  },
});
await orders.publish('order #1');
clock.advance(60_000);
await new Promise((resolve) => setImmediate(resolve));
const dead = await expired.get();
const death = (dead?.properties.headers?.['x-death'] as { reason: string }[] | undefined)?.[0];
console.log(
  `orders holds ${orders.messageCount}; dead-lettered: ${dead?.bodyString()} (${death?.reason})`,
);

// Queue expiry: an unused queue deletes itself.
await broker.queue('scratch', { arguments: { 'x-expires': 5_000 } });
clock.advance(5_000);
await new Promise((resolve) => setImmediate(resolve));
console.log(
  'scratch still declared:',
  broker.queues().some((q) => q.name === 'scratch'),
);

// Stream retention by age: segments older than a day are dropped.
const events = await broker.queue('events', {
  arguments: {
    'x-queue-type': 'stream',
    'x-max-age': '1D',
    'x-stream-max-segment-size-bytes': 64,
  },
});
for (let i = 0; i < 5; i++) await events.publish(`yesterday ${i}`);
clock.advance(25 * 3600_000);
for (let i = 0; i < 5; i++) await events.publish(`today ${i}`);
clock.advance(60_000);
const kept = [...events.read('first')].map((e) => e.offset);
console.log(`stream keeps offsets ${kept.join(', ')} of 10 (retention drops whole segments)`);

await broker.close();
