import { describe, expect, it, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Queue } from '../../src/queues/priority-queue.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

describe('dead-lettering through the broker', () => {
  it('routes a rejected message to the queue named by x-dead-letter-routing-key', async () => {
    await using broker = await Broker.open();
    const dlq = (await broker.queue('dlq')) as Queue;
    const work = (await broker.queue('work', {
      deadLetterExchange: '',
      deadLetterRoutingKey: 'dlq',
    })) as Queue;
    await work.publish('bad job');
    await (await work.get({ noAck: false }))?.reject();
    const dead = await dlq.consumeOne({ timeout: 15_000 });
    expect(dead?.bodyString()).toBe('bad job');
    expect(dead?.routingKey).toBe('dlq');
    expect(dead?.properties.headers?.['x-first-death-reason']).toBe('rejected');
    expect(dead?.properties.headers?.['x-first-death-queue']).toBe('work');
  });

  it("uses the message's routing key (its queue's name) without a dead-letter routing key", async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const work = (await broker.queue('work', { deadLetterExchange: '', messageTtl: 10 })) as Queue;
    await work.publish('late');
    clock.advance(20);
    // The target is 'work' itself: a TTL cycle, dropped as brokers do.
    await tick();
    expect(broker.queues().map((q) => [q.name, q.messages])).toEqual([['work', 0]]);
  });

  it('dead-letters expired messages into a priority queue and a stream by name', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const audit = await broker.queue('audit', { type: 'stream' });
    const retry = await broker.queue('retry', { maxPriority: 3 });
    const a = (await broker.queue('a', {
      messageTtl: 5,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'audit',
    })) as Queue;
    const b = (await broker.queue('b', {
      maxLength: 1,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'retry',
    })) as Queue;
    await a.publish('expired');
    clock.advance(10);
    await b.publish('first');
    await b.publish('second');
    await tick();
    expect(audit.messageCount).toBe(1);
    expect(retry.messageCount).toBe(1);
  });

  it('drops a dead letter silently when its target queue does not exist', async () => {
    await using broker = await Broker.open();
    const work = (await broker.queue('work', {
      deadLetterExchange: '',
      deadLetterRoutingKey: 'nowhere',
    })) as Queue;
    await work.publish('x');
    await (await work.get({ noAck: false }))?.reject();
    await tick();
    expect(broker.queues().map((q) => [q.name, q.messages])).toEqual([['work', 0]]);
  });

  it('drops a dead letter whose dead-letter exchange does not exist', async () => {
    await using broker = await Broker.open();
    await broker.queue('dlq');
    const work = (await broker.queue('work', {
      deadLetterExchange: 'dlx',
      deadLetterRoutingKey: 'dlq',
    })) as Queue;
    await work.publish('x');
    await (await work.get({ noAck: false }))?.reject();
    await tick();
    expect(broker.queues().map((q) => [q.name, q.messages])).toEqual([
      ['dlq', 0],
      ['work', 0],
    ]);
  });
});

describe('dead-letter order', () => {
  it('dead-letters messages in the order they died, into a queue not used before', async () => {
    await using broker = await Broker.open();
    const dlq = await broker.queue('dlq');
    const q = await broker.queue('q', {
      maxLength: 2,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'dlq',
    });
    for (const body of ['a', 'b', 'c', 'd']) await q.publish(body);
    await tick();
    const dead: string[] = [];
    for (let m = await dlq.get(); m; m = await dlq.get()) dead.push(m.bodyString());
    expect(dead).toEqual(['a', 'b']);
  });
});

function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

test('a message that expired while its dead letter is being stored is never delivered', async () => {
  const clock = new ManualClock();
  await using broker = await Broker.open({ clock });
  const dlq = await broker.queue('dlq');
  const work = await broker.queue('work', {
    arguments: {
      'x-message-ttl': 1000,
      'x-max-length': 1,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': 'dlq',
    },
  });
  await work.publish('pushed out');
  await work.publish('expires');
  clock.advance(1000);
  await work.publish('fresh');
  expect((await work.get())?.bodyString()).toBe('fresh');
  const dead: string[] = [];
  for (let m = await dlq.get(); m; m = await dlq.get()) dead.push(m.bodyString());
  expect(dead).toEqual(['pushed out', 'expires']);
});
