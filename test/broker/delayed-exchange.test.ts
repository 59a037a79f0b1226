import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

const HOUR = 3_600_000;

async function setup(type = 'direct') {
  const clock = new ManualClock();
  const broker = await Broker.open({ clock });
  const exchange = await broker.exchange('later', 'x-delayed-message', {
    arguments: { 'x-delayed-type': type },
  });
  const queue = await broker.queue('jobs');
  await queue.bind('later', 'k');
  return { clock, broker, exchange, queue };
}

/** Lets routed messages settle (stores resolve on later turns). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Moves the clock on, and lets what fell due reach its queues. */
async function advance(clock: ManualClock, ms: number): Promise<void> {
  clock.advance(ms);
  await settle();
}

type AnyQueue = Awaited<ReturnType<Broker['queue']>>;

async function bodies(queue: AnyQueue): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString() ?? '');
  return out;
}

describe('a delayed exchange', () => {
  it('routes a message with x-delay once its delay has passed on the clock, not before', async () => {
    const { clock, broker, exchange, queue } = await setup();
    await exchange.publish('in an hour', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    await exchange.publish('a ms later', { routingKey: 'k', headers: { 'x-delay': HOUR + 1 } });
    expect(queue.messageCount).toBe(0);
    await advance(clock, HOUR - 1);
    expect(queue.messageCount).toBe(0);
    await advance(clock, 1);
    expect(await bodies(queue)).toEqual(['in an hour']);
    await advance(clock, 1);
    expect(await bodies(queue)).toEqual(['a ms later']);
    await broker.close();
  });

  it('routes a message without x-delay at once, as its x-delayed-type routes', async () => {
    const { broker, exchange, queue } = await setup();
    await exchange.publish('now', { routingKey: 'k' });
    await exchange.publish('elsewhere', { routingKey: 'other' });
    expect(await bodies(queue)).toEqual(['now']);
    await broker.close();
  });

  it('routes in due order, messages due at the same time in publish order', async () => {
    const { clock, broker, exchange, queue } = await setup();
    for (const [body, delay] of [
      ['c', 3 * HOUR],
      ['a1', HOUR],
      ['b', 2 * HOUR],
      ['a2', HOUR],
      ['a3', HOUR],
    ] as const) {
      await exchange.publish(body, { routingKey: 'k', headers: { 'x-delay': delay } });
    }
    await advance(clock, 3 * HOUR);
    expect(await bodies(queue)).toEqual(['a1', 'a2', 'a3', 'b', 'c']);
    await broker.close();
  });

  it('measures each delay from its own publish: a later, shorter one can come first', async () => {
    const { clock, broker, exchange, queue } = await setup();
    await exchange.publish('long', { routingKey: 'k', headers: { 'x-delay': 10_000 } });
    await advance(clock, 5_000);
    await exchange.publish('short', { routingKey: 'k', headers: { 'x-delay': 1_000 } });
    await advance(clock, 1_000);
    expect(await bodies(queue)).toEqual(['short']);
    await advance(clock, 4_000);
    expect(await bodies(queue)).toEqual(['long']);
    await broker.close();
  });

  it('removes x-delay from the message it routes and keeps its other headers', async () => {
    const { clock, broker, exchange, queue } = await setup();
    await exchange.publish('x', { routingKey: 'k', headers: { 'x-delay': 10, other: 1 } });
    await advance(clock, 10);
    const message = await queue.get();
    expect(message?.properties.headers).not.toHaveProperty('x-delay');
    expect(message?.properties.headers?.other).toBe(1);
    expect(message?.exchange).toBe('later');
    expect(message?.routingKey).toBe('k');
    await broker.close();
  });

  it('routes through the bindings as they stand when the message is due', async () => {
    const { clock, broker, exchange, queue } = await setup();
    const late = await broker.queue('late');
    await exchange.publish('x', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    await queue.unbind('later', 'k');
    await late.bind('later', 'k');
    await advance(clock, HOUR);
    expect([queue.messageCount, late.messageCount]).toEqual([0, 1]);
    await broker.close();
  });

  it('applies the alternate exchange when the message is due, not when it is published', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    await broker.exchange('unrouted', 'fanout');
    const ae = await broker.queue('ae');
    await ae.bind('unrouted');
    const exchange = await broker.exchange('later', 'x-delayed-message', {
      arguments: { 'x-delayed-type': 'direct', 'alternate-exchange': 'unrouted' },
    });
    const jobs = await broker.queue('jobs');
    await exchange.publish('bound later', { routingKey: 'k', headers: { 'x-delay': 100 } });
    await exchange.publish('never bound', { routingKey: 'z', headers: { 'x-delay': 100 } });
    await jobs.bind('later', 'k');
    await advance(clock, 100);
    expect([await bodies(jobs), await bodies(ae)]).toEqual([['bound later'], ['never bound']]);
  });

  it('accepts a mandatory delayed publish that no binding matches, and drops it when due', async () => {
    const { clock, broker, exchange } = await setup();
    await exchange.publish('x', { routingKey: 'none', mandatory: true, headers: { 'x-delay': 5 } });
    await advance(clock, 5);
    await settle();
    expect(broker.stats()).toMatchObject({ unroutableDropped: 1, unroutableReturned: 0 });
    await broker.close();
  });

  it.each([
    ['negative', -5000],
    ['a string', '5000'],
    ['fractional', 5000.5],
    ['beyond 32 bits', 2 ** 32],
    ['a boolean', true],
  ])(
    'treats an x-delay that is %s as no delay: held, routed at the next tick',
    async (_, delay) => {
      const { clock, broker, exchange, queue } = await setup();
      await exchange.publish('x', { routingKey: 'k', headers: { 'x-delay': delay } });
      expect(broker.exchanges().find((e) => e.name === 'later')?.delayed?.messages).toBe(1);
      await advance(clock, 0);
      expect(queue.messageCount).toBe(1);
      await broker.close();
    },
  );

  it('holds up to 2^32 - 1 ms, as LavinMQ', async () => {
    const { clock, broker, exchange, queue } = await setup();
    await exchange.publish('x', { routingKey: 'k', headers: { 'x-delay': 2 ** 32 - 1 } });
    await advance(clock, 2 ** 32 - 2);
    expect(queue.messageCount).toBe(0);
    await advance(clock, 1);
    expect(queue.messageCount).toBe(1);
    await broker.close();
  });

  it('lists how many messages it holds and when the first falls due', async () => {
    const { clock, broker, exchange } = await setup();
    const start = clock.now();
    await exchange.publish('a', { routingKey: 'k', headers: { 'x-delay': 2 * HOUR } });
    await exchange.publish('b', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    const listed = () => broker.exchanges().find((e) => e.name === 'later');
    expect(listed()?.delayed).toEqual({ messages: 2, nextDue: start + HOUR });
    await advance(clock, HOUR);
    expect(listed()?.delayed).toEqual({ messages: 1, nextDue: start + 2 * HOUR });
    expect(broker.exchanges().find((e) => e.name === 'amq.direct')?.delayed).toBeUndefined();
    await broker.close();
  });

  it('drops what it holds when deleted, also when declared again at once', async () => {
    const { clock, broker, exchange, queue } = await setup();
    await exchange.publish('x', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    await broker.deleteExchange('later');
    await broker.exchange('later', 'x-delayed-message', {
      arguments: { 'x-delayed-type': 'direct' },
    });
    await queue.bind('later', 'k');
    expect(broker.exchanges().find((e) => e.name === 'later')?.delayed?.messages).toBe(0);
    await advance(clock, HOUR);
    expect(queue.messageCount).toBe(0);
    await broker.close();
  });

  it('routes as its x-delayed-type names: topic patterns', async () => {
    const { clock, broker, exchange, queue } = await setup('topic');
    await queue.bind('later', 'job.*');
    await exchange.publish('t', { routingKey: 'job.mail', headers: { 'x-delay': 10 } });
    await advance(clock, 10);
    expect(await bodies(queue)).toEqual(['t']);
    await broker.close();
  });

  it('is also declared as x-delayed-exchange: true on an ordinary type, the same exchange', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const exchange = await broker.exchange('later', 'fanout', {
      arguments: { 'x-delayed-exchange': true },
    });
    await broker.exchange('later', 'fanout', { arguments: { 'x-delayed-exchange': true } });
    const queue = await broker.queue('q');
    await queue.bind('later');
    await exchange.publish('x', { headers: { 'x-delay': 50 } });
    expect(queue.messageCount).toBe(0);
    await advance(clock, 50);
    expect(queue.messageCount).toBe(1);
    await broker.exchange('d', 'x-delayed-message', { arguments: { 'x-delayed-type': 'topic' } });
    await expect(
      broker.exchange('d', 'topic', { arguments: { 'x-delayed-exchange': true } }),
    ).resolves.toBeDefined();
  });

  it('refuses a declaration without x-delayed-type or with an unknown one, as LavinMQ words it', async () => {
    await using broker = await Broker.open();
    await expect(broker.exchange('d', 'x-delayed-message')).rejects.toMatchObject({
      code: 'MQLITE_PRECONDITION_FAILED',
      replyCode: 406,
      message: expect.stringContaining("Missing required argument 'x-delayed-type'"),
    });
    await expect(
      broker.exchange('d', 'x-delayed-message', { arguments: { 'x-delayed-type': 'foo' } }),
    ).rejects.toMatchObject({
      replyCode: 406,
      message: expect.stringContaining("unknown exchange type 'foo'"),
    });
    expect(broker.exchanges().some((e) => e.name === 'd')).toBe(false);
  });

  it('refuses a redeclaration with another x-delayed-type or without delaying', async () => {
    await using broker = await Broker.open();
    await broker.exchange('d', 'x-delayed-message', { arguments: { 'x-delayed-type': 'topic' } });
    await expect(
      broker.exchange('d', 'x-delayed-message', { arguments: { 'x-delayed-type': 'direct' } }),
    ).rejects.toMatchObject({ replyCode: 406 });
    await expect(broker.exchange('d', 'topic')).rejects.toMatchObject({ replyCode: 406 });
  });

  it('runs one timer for any number of pending messages', async () => {
    const { clock, broker, exchange, queue } = await setup();
    for (let i = 0; i < 1000; i++) {
      await exchange.publish(String(i), { routingKey: 'k', headers: { 'x-delay': 1000 - i } });
    }
    expect(clock.pendingTimers).toBeLessThanOrEqual(1);
    await advance(clock, 1000);
    expect(queue.messageCount).toBe(1000);
    expect(clock.pendingTimers).toBe(0);
    await broker.close();
  });
});

describe('a delayed exchange in definitions', () => {
  it('is exported as the plugin writes it and imported again, LavinMQ’s export too', async () => {
    const { broker } = await setup('topic');
    const exported = broker.exportDefinitions();
    expect(exported.exchanges.find((e) => e.name === 'later')).toMatchObject({
      type: 'x-delayed-message',
      arguments: { 'x-delayed-type': 'topic' },
    });
    await broker.close();
    const lavinmq = {
      exchanges: [
        {
          name: 'from-lavinmq',
          vhost: '/',
          type: 'x-delayed-exchange',
          durable: true,
          auto_delete: false,
          internal: false,
          arguments: { 'x-delayed-type': 'fanout' },
        },
      ],
    };
    const clock = new ManualClock();
    await using again = await Broker.open({
      clock,
      definitions: { ...exported, exchanges: [...exported.exchanges, ...lavinmq.exchanges] },
    });
    const queue = await again.queue('q');
    await queue.bind('from-lavinmq');
    await again.publish('from-lavinmq', 'x', { headers: { 'x-delay': 10 } });
    expect(again.exchanges().find((e) => e.name === 'later')?.delayed?.messages).toBe(0);
    await advance(clock, 10);
    expect(queue.messageCount).toBe(1);
  });
});

describe('the delayed-message policy (LavinMQ)', () => {
  it('makes a matching exchange delayed; once cleared, new messages go at once and held ones when due', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const exchange = await broker.exchange('plain', 'direct');
    const queue = await broker.queue('jobs');
    await queue.bind('plain', 'k');
    await broker.setPolicy('delay', {
      pattern: '^plain$',
      applyTo: 'exchanges',
      definition: { 'delayed-message': true },
    });
    await exchange.publish('held', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    expect(queue.messageCount).toBe(0);
    expect(broker.exchanges().find((x) => x.name === 'plain')?.delayed?.messages).toBe(1);
    await broker.clearPolicy('delay');
    await exchange.publish('now', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    expect(await bodies(queue)).toEqual(['now']);
    await advance(clock, HOUR);
    expect(await bodies(queue)).toEqual(['held']);
  });

  it('takes the string "true" as LavinMQ\'s HTTP API sends it, and refuses other values', async () => {
    await using broker = await Broker.open();
    await broker.exchange('plain', 'fanout');
    await broker.setPolicy('delay', {
      pattern: '^plain$',
      definition: { 'delayed-message': 'true' },
    });
    expect(broker.exchanges().find((x) => x.name === 'plain')?.delayed).toBeDefined();
    await expect(
      broker.setPolicy('bad', { pattern: '.*', definition: { 'delayed-message': 'yes' } }),
    ).rejects.toMatchObject({ replyCode: 406 });
  });
});
