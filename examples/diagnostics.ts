/**
 * Watching what queues do on their own through `node:diagnostics_channel`: a message pushed out
 * by a length limit and dead-lettered, one whose TTL ran out, and a publish no queue was bound
 * to. Nothing is built for a channel nobody listens to.
 */
import { subscribe } from 'node:diagnostics_channel';
import {
  Broker,
  CHANNELS,
  type DeadLetterEvent,
  type DropEvent,
  type UnroutableEvent,
} from 'mqlite';
import { ManualClock } from 'mqlite/testing';

const text = (body: Uint8Array) => new TextDecoder().decode(body);
subscribe(CHANNELS.drop, (event) => {
  const { queue, reason, message, deadLettered } = event as DropEvent;
  console.log(
    `drop: '${text(message.body)}' left ${queue} (${reason}, dead-lettered: ${deadLettered})`,
  );
});
subscribe(CHANNELS.deadLetter, (event) => {
  const { queue, reason, routingKey } = event as DeadLetterEvent;
  console.log(`dead-letter: from ${queue} (${reason}) routed by '${routingKey}'`);
});
subscribe(CHANNELS.unroutable, (event) => {
  const { exchange, routingKey, message } = event as UnroutableEvent;
  console.log(`unroutable: '${text(message.body)}' to exchange '${exchange}', key '${routingKey}'`);
});

const clock = new ManualClock();
const broker = await Broker.open({ clock });
await broker.queue('parked');
const work = await broker.queue('work', {
  arguments: {
    'x-max-length': 1,
    'x-message-ttl': 60_000,
    'x-dead-letter-exchange': '',
    'x-dead-letter-routing-key': 'parked',
  },
});
await work.publish('first');
await work.publish('second'); // pushes 'first' out of the one-message queue
clock.advance(60_000); // 'second' expires
await broker.exchange('orders', 'direct');
await broker.publish('orders', 'nobody bound', { routingKey: 'eu' });
console.log(`unroutable dropped: ${broker.stats().unroutableDropped}`);
await broker.close();
