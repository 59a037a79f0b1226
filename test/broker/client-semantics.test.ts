/**
 * `get`, `consumeOne` and `subscribe` behave as `@cloudamqp/amqp-client` documents them, seen
 * through what stays in the queue once the session they ran in closes (a dropped connection).
 */
import { describe, expect, it } from 'vitest';
import { Broker, type BrokerQueue } from '../../src/broker/broker.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

async function bodies(queue: BrokerQueue): Promise<[string, boolean][]> {
  const out: [string, boolean][] = [];
  for (let m = await queue.get(); m; m = await queue.get())
    out.push([m.bodyString(), m.redelivered]);
  return out;
}

describe('the client semantics of get, consumeOne and subscribe', () => {
  it('get() takes a message for good by default (noAck: true); get({ noAck: false }) holds it', async () => {
    await using broker = await Broker.open();
    const session = broker.session();
    const q = await session.queue('q');
    await q.publish('taken');
    await q.publish('held');
    expect((await q.get())?.bodyString()).toBe('taken');
    expect((await q.get({ noAck: false }))?.bodyString()).toBe('held');
    await session.close();
    // The taken one is gone; the held one waits for its ack (a session does not track gets).
    expect(broker.queues()[0]).toMatchObject({ messagesReady: 0, messagesUnacknowledged: 1 });
  });

  it('consumeOne() acks the message before resolving, and leaves later ones in the queue', async () => {
    await using broker = await Broker.open();
    const session = broker.session();
    const q = await session.queue('q');
    await q.publish('one');
    await q.publish('two');
    expect((await q.consumeOne({ timeout: 15_000 })).bodyString()).toBe('one');
    await session.close();
    expect(await bodies(await broker.queue('q'))).toEqual([['two', false]]);
  });

  it('subscribe(callback) acks when the callback returns and requeues when it throws', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('q');
    await q.publish('ok');
    await q.publish('fails');
    const seen: string[] = [];
    await q.subscribe((msg) => {
      seen.push(msg.bodyString());
      if (msg.bodyString() === 'fails') {
        void msg.cancelConsumer();
        throw new Error('handler failed');
      }
    });
    await tick();
    expect(seen).toEqual(['ok', 'fails']);
    expect(await bodies(q)).toEqual([['fails', true]]);
  });

  it('subscribe(params, callback) with manualAck leaves settling to the callback', async () => {
    await using broker = await Broker.open();
    const session = broker.session();
    const q = await session.queue('q');
    await q.publish('a');
    await q.subscribe({ manualAck: true, prefetch: 1 }, () => {});
    await tick();
    expect(broker.queues()[0]).toMatchObject({ messagesUnacknowledged: 1 });
    await session.close();
    expect(await bodies(await broker.queue('q'))).toEqual([['a', true]]);
  });
});
