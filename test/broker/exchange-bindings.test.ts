import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker, type BrokerQueue } from '../../src/broker/broker.js';
import { NotFoundError, PreconditionFailedError } from '../../src/errors.js';
import { STORAGE_KINDS, TestStorage } from '../support/test-storage.js';

/** Bodies of every ready message, taken with `get`. */
async function drain(queue: BrokerQueue): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString());
  return out;
}

describe.each(STORAGE_KINDS)('exchange bindings through the broker (%s storage)', (kind) => {
  let storage: TestStorage;
  beforeEach(() => {
    storage = new TestStorage(kind);
  });
  afterEach(async () => {
    await storage.dispose();
  });

  it('routes a topic exchange into a fanout bound to it, as exchange.bind of amqp-client', async () => {
    await using broker = await Broker.open({ storage: storage.storage });
    const orders = await broker.topicExchange('orders');
    const audit = await broker.fanoutExchange('audit');
    expect(await audit.bind(orders, 'orders.eu.*')).toBe(audit);
    const a = await (await broker.queue('audit-a')).bind(audit);
    const b = await (await broker.queue('audit-b')).bind(audit);
    await orders.publish('eu-1', { routingKey: 'orders.eu.new' });
    await orders.publish('us-1', { routingKey: 'orders.us.new' });
    expect(await drain(a)).toEqual(['eu-1']);
    expect(await drain(b)).toEqual(['eu-1']);
    expect(broker.bindings('audit', 'exchange')).toEqual([
      { source: 'orders', routingKey: 'orders.eu.*', args: {} },
    ]);
    await audit.unbind('orders', 'orders.eu.*');
    await orders.publish('eu-2', { routingKey: 'orders.eu.new' });
    expect(await drain(a)).toEqual([]);
  });

  it('delivers once to a queue reached through a cycle and two paths', async () => {
    await using broker = await Broker.open({ storage: storage.storage });
    const x = await broker.fanoutExchange('x');
    const y = await broker.fanoutExchange('y');
    await broker.bindExchange('y', 'x');
    await broker.bindExchange('x', 'y');
    const q = await broker.queue('q');
    await q.bind(x);
    await q.bind(y);
    await x.publish('once');
    expect(await drain(q)).toEqual(['once']);
  });

  it('refuses a bind to a missing exchange with 404, changing nothing', async () => {
    await using broker = await Broker.open({ storage: storage.storage });
    const x = await broker.directExchange('x');
    await expect(x.bind('nowhere')).rejects.toThrow(NotFoundError);
    await expect(broker.bindExchange('nowhere', 'x')).rejects.toThrow(
      "NOT_FOUND - no exchange 'nowhere' in vhost '/'",
    );
    await expect(
      broker.bindExchange('x', 'amq.headers', '', { 'x-match': 'some' }),
    ).rejects.toThrow(PreconditionFailedError);
    expect(broker.bindings('x', 'exchange')).toEqual([]);
  });
});

describe('exchange bindings across a reopen (fs storage)', () => {
  let storage: TestStorage;
  beforeEach(() => {
    storage = new TestStorage('fs');
  });
  afterEach(async () => {
    await storage.dispose();
  });
  /** A broker over the same data as the one before (a process restart). */
  const reopen = async () => Broker.open({ storage: await storage.reopen() });

  it('keeps bindings between durable exchanges across a reopen, not those to transient ones', async () => {
    {
      await using broker = await Broker.open({ storage: storage.storage });
      await broker.topicExchange('in');
      await broker.fanoutExchange('out');
      await broker.fanoutExchange('scratch', { durable: false });
      await broker.bindExchange('out', 'in', 'a.#');
      await broker.bindExchange('scratch', 'in', '#');
      await (await broker.queue('q')).bind('out');
    }
    await using broker = await reopen();
    expect(broker.bindings('out', 'exchange')).toEqual([
      { source: 'in', routingKey: 'a.#', args: {} },
    ]);
    expect(broker.exchanges().some((e) => e.name === 'scratch')).toBe(false);
    await broker.publish('in', 'through', { routingKey: 'a.b' });
    expect(await drain(await broker.queue('q'))).toEqual(['through']);
  });

  it('persists the removal of bindings with a deleted exchange, source or destination', async () => {
    {
      await using broker = await Broker.open({ storage: storage.storage });
      for (const name of ['up', 'mid', 'down']) await broker.fanoutExchange(name);
      await broker.bindExchange('mid', 'up');
      await broker.bindExchange('down', 'mid');
      await broker.deleteExchange('mid');
    }
    await using broker = await reopen();
    expect(broker.exchanges().find((e) => e.name === 'up')?.bindingCount).toBe(0);
    expect(broker.bindings('down', 'exchange')).toEqual([]);
  });
});

describe('sender-selected distribution (CC and BCC headers)', () => {
  it('routes to the keys CC and BCC list, delivering CC and dropping BCC', async () => {
    await using broker = await Broker.open();
    const queues: Record<string, BrokerQueue> = {};
    for (const key of ['main', 'copy', 'blind']) {
      queues[key] = await (await broker.queue(`q-${key}`)).bind('amq.direct', key);
    }
    await broker.publish('amq.direct', 'm', {
      routingKey: 'main',
      headers: { CC: ['copy', 'main', 7], BCC: ['blind'], other: 1 },
    });
    for (const key of ['main', 'copy', 'blind']) {
      const got = await queues[key]!.get();
      expect(got?.bodyString()).toBe('m');
      expect(got?.routingKey).toBe('main');
      const { 'x-delivery-count': _count, ...headers } = got?.properties.headers ?? {};
      expect(headers).toEqual({ CC: ['copy', 'main', 7], other: 1 });
      expect(await queues[key]!.get()).toBeNull();
    }
  });

  it('routes CC keys through the default exchange to queues by name', async () => {
    await using broker = await Broker.open();
    const a = await broker.queue('a');
    const b = await broker.queue('b');
    await broker.publish('', 'x', { routingKey: 'a', headers: { BCC: ['b', 'missing'] } });
    expect(await drain(a)).toEqual(['x']);
    expect(await drain(b)).toEqual(['x']);
  });

  it('refuses a CC that is not an array with 406, as RabbitMQ words it', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('q');
    await expect(
      broker.publish('', 'x', { routingKey: 'q', headers: { CC: 'q' } }),
    ).rejects.toThrow(
      new PreconditionFailedError('invalid message: {unacceptable_type_in_header,"CC",longstr}'),
    );
    expect(await drain(q)).toEqual([]);
  });
});
