import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker, type BrokerQueue } from '../../src/broker/broker.js';
import { AccessRefusedError, NoRouteError, NotFoundError } from '../../src/errors.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { STORAGE_KINDS, TestStorage } from '../support/test-storage.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Bodies of every ready message, taken with `get`. */
async function drain(queue: BrokerQueue): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString());
  return out;
}

describe.each(STORAGE_KINDS)('exchanges through the broker (%s storage)', (kind) => {
  let storage: TestStorage;
  beforeEach(() => {
    storage = new TestStorage(kind);
  });
  afterEach(async () => {
    await storage.dispose();
  });
  const fresh = (clock?: ManualClock) =>
    Broker.open({ storage: storage.storage, ...(clock && { clock }) });

  it('routes by exact key on a direct exchange, to every bound queue on a fanout', async () => {
    await using broker = await fresh();
    const direct = await broker.exchange('orders', 'direct');
    const fanout = await broker.fanoutExchange('events');
    const paid = await broker.queue('paid');
    const audit = await broker.queue('audit');
    await paid.bind(direct, 'paid');
    await audit.bind('events');
    await direct.publish('o1', { routingKey: 'paid' });
    await direct.publish('o2', { routingKey: 'shipped' });
    await fanout.publish('e1', { routingKey: 'anything' });
    expect(await drain(paid)).toEqual(['o1']);
    const [e1] = [await audit.get()];
    expect([e1?.bodyString(), e1?.exchange, e1?.routingKey]).toEqual(['e1', 'events', 'anything']);
  });

  it('matches topic patterns and headers, through the predeclared amq.* exchanges too', async () => {
    await using broker = await fresh();
    const topic = await broker.topicExchange();
    const headers = await broker.headersExchange();
    const errors = await broker.queue('errors');
    const eu = await broker.queue('eu');
    await errors.bind('amq.topic', '*.error');
    await errors.bind('amq.topic', 'db.#');
    await eu.bind('amq.headers', '', { 'x-match': 'any', region: 'eu', country: 'se' });
    for (const key of ['app.error', 'app.info', 'db', 'db.slow.query']) {
      await topic.publish(key, { routingKey: key });
    }
    await headers.publish('se', { headers: { country: 'se' } });
    await headers.publish('us', { headers: { region: 'us' } });
    expect(await drain(errors)).toEqual(['app.error', 'db', 'db.slow.query']);
    expect(await drain(eu)).toEqual(['se']);
  });

  it('delivers one copy to a queue bound twice, and nothing once unbound', async () => {
    await using broker = await fresh();
    const ex = await broker.exchange('x', 'direct');
    const q = await broker.queue('q');
    await q.bind(ex, 'k');
    await q.bind(ex, 'k');
    await ex.publish('1', { routingKey: 'k' });
    expect(await q.unbind(ex, 'k')).toBe(q);
    await ex.publish('2', { routingKey: 'k' });
    expect(await drain(q)).toEqual(['1']);
    expect(broker.bindings('q')).toEqual([]);
  });

  it('rejects a mandatory publish that reaches no queue with 312, and counts dropped ones', async () => {
    await using broker = await fresh();
    const ex = await broker.exchange('x', 'direct');
    const error = await ex.publish('lost', { routingKey: 'k', mandatory: true }).catch((e) => e);
    expect(error).toBeInstanceOf(NoRouteError);
    expect(error).toMatchObject({ code: 'MQLITE_NO_ROUTE', replyCode: 312 });
    expect(error.message).toMatch(/^NO_ROUTE - message published to exchange 'x'/);
    await ex.publish('dropped', { routingKey: 'k' });
    await ex.publish('dropped', { routingKey: 'k' });
    expect(broker.stats()).toMatchObject({ unroutableDropped: 2, unroutableReturned: 1 });
  });

  it('sends what matches nothing to the alternate-exchange', async () => {
    await using broker = await fresh();
    await broker.fanoutExchange('unrouted');
    const ex = await broker.exchange('x', 'direct', {
      arguments: { 'alternate-exchange': 'unrouted' },
    });
    const known = await broker.queue('known');
    const rest = await broker.queue('rest');
    await known.bind(ex, 'k');
    await rest.bind('unrouted');
    await ex.publish('hit', { routingKey: 'k', mandatory: true });
    await ex.publish('miss', { routingKey: 'other', mandatory: true });
    expect(await drain(known)).toEqual(['hit']);
    expect(await drain(rest)).toEqual(['miss']);
  });

  it('forgets the bindings of a deleted queue: a queue of the same name gets nothing', async () => {
    await using broker = await fresh();
    const ex = await broker.fanoutExchange('x');
    const q = await broker.queue('q');
    await q.bind(ex);
    await q.delete();
    await expect(ex.publish('m', { mandatory: true })).rejects.toBeInstanceOf(NoRouteError);
    await expect(q.bind(ex)).rejects.toBeInstanceOf(NotFoundError);
    const again = await broker.queue('q');
    await ex.publish('m');
    expect(await drain(again)).toEqual([]);
  });

  it('deletes an exchange (refused while bound with ifUnused), then publishing to it is 404', async () => {
    await using broker = await fresh();
    const ex = await broker.exchange('x', 'topic');
    const q = await broker.queue('q');
    await q.bind(ex, '#');
    await expect(ex.delete({ ifUnused: true })).rejects.toThrow(
      "PRECONDITION_FAILED - exchange 'x' in vhost '/' in use",
    );
    await ex.delete();
    await broker.deleteExchange('x');
    await expect(ex.publish('m')).rejects.toThrow("NOT_FOUND - no exchange 'x' in vhost '/'");
    expect(broker.bindings('q')).toEqual([]);
  });

  it('honours ifUnused and ifEmpty on queue.delete()', async () => {
    await using broker = await fresh();
    const q = await broker.queue('q');
    await q.publish('m');
    await expect(q.delete({ ifEmpty: true })).rejects.toThrow(/not empty/);
    const sub = await q.subscribe({ manualAck: true }, () => {});
    await expect(q.delete({ ifUnused: true })).rejects.toThrow(/in use/);
    await sub.cancel();
    expect(await q.delete()).toBe(0); // its one message is unacked
    expect(broker.queues()).toEqual([]);
  });

  it('dead-letters through a named exchange, routing by the original routing key', async () => {
    await using broker = await fresh();
    await broker.exchange('dlx', 'topic');
    const dead = await broker.queue('dead');
    await dead.bind('dlx', 'work.#');
    const work = await broker.queue('work', { deadLetterExchange: 'dlx' });
    await work.publish('job');
    await (await work.get({ noAck: false }))?.reject();
    await tick();
    const msg = await dead.get();
    expect([msg?.bodyString(), msg?.exchange, msg?.routingKey]).toEqual(['job', 'dlx', 'work']);
    const [death] = (msg?.properties.headers?.['x-death'] ?? []) as Record<string, unknown>[];
    expect(death).toMatchObject({ exchange: '', queue: 'work', reason: 'rejected' });
  });

  it('dead-letters expired messages to a fanout exchange and its alternate', async () => {
    const clock = new ManualClock();
    await using broker = await fresh(clock);
    await broker.exchange('dlx', 'fanout');
    const a = await broker.queue('a');
    const b = await broker.queue('b');
    await a.bind('dlx');
    await b.bind('dlx');
    const work = await broker.queue('work', { deadLetterExchange: 'dlx', messageTtl: 10 });
    await work.publish('late');
    clock.advance(10);
    await tick();
    expect([await drain(a), await drain(b)]).toEqual([['late'], ['late']]);
  });

  it('refuses bad exchange calls with the broker errors, changing nothing', async () => {
    await using broker = await fresh();
    const q = await broker.queue('q');
    await expect(broker.exchange('missing', 'direct', { passive: true })).rejects.toThrow(
      "NOT_FOUND - no exchange 'missing' in vhost '/'",
    );
    await expect(broker.exchange('x', 'fast')).rejects.toMatchObject({ replyCode: 406 });
    await expect(broker.exchange('amq.mine', 'direct')).rejects.toMatchObject({ replyCode: 403 });
    await expect(broker.deleteExchange('amq.direct')).rejects.toMatchObject({ replyCode: 403 });
    await expect(broker.deleteExchange('amq.nothing-here', { ifUnused: true })).rejects.toThrow(
      AccessRefusedError,
    );
    await expect(q.bind('')).rejects.toMatchObject({ replyCode: 403 });
    await expect(q.bind('amq.headers', '', { 'x-match': 'most' })).rejects.toMatchObject({
      replyCode: 406,
    });
    const internal = await broker.exchange('internal', 'fanout', { internal: true });
    await expect(internal.publish('m')).rejects.toMatchObject({ replyCode: 403 });
    const direct = await broker.directExchange();
    await expect(direct.publish('m', { routingKey: 'k'.repeat(256) })).rejects.toBeInstanceOf(
      RangeError,
    );
    await expect(
      direct.publish('m', { routingKey: 7 as unknown as string }),
    ).rejects.toBeInstanceOf(TypeError);
    expect(broker.bindings('q')).toEqual([]);
    expect(broker.exchanges().map((e) => e.name)).toEqual([
      '',
      'amq.direct',
      'amq.fanout',
      'amq.headers',
      'amq.match',
      'amq.topic',
      'internal',
    ]);
    expect(broker.stats()).toMatchObject({ unroutableDropped: 0, unroutableReturned: 0 });
  });

  it('rejects a publish when one of the queues it reaches refuses it', async () => {
    await using broker = await fresh();
    const ex = await broker.fanoutExchange('x');
    const full = await broker.queue('full', { maxLength: 0, overflow: 'reject-publish' });
    const open = await broker.queue('open');
    await full.bind(ex);
    await open.bind(ex);
    await expect(ex.publish('m')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect(await drain(open)).toEqual(['m']);
  });

  it('stops with stop(), as AMQPSessionLike names close()', async () => {
    const broker = await fresh();
    await broker.stop('done');
    expect(broker.closed).toBe(true);
    await expect(broker.fanoutExchange()).rejects.toThrow(/closed/);
  });

  it('declares exchanges through a session; its queue views chain bind', async () => {
    await using broker = await fresh();
    const session = broker.session();
    const ex = await session.directExchange('d');
    const q = await session.queue('q');
    expect(await (await q.bind(ex, 'a')).bind(ex, 'b')).toBe(q);
    await ex.publish('m', { routingKey: 'b' });
    expect(await drain(q)).toEqual(['m']);
    await session.stop();
    await expect(session.fanoutExchange()).rejects.toThrow(/closed/);
  });
});

describe('exchange persistence (fs storage)', () => {
  let storage: TestStorage;
  beforeEach(() => {
    storage = new TestStorage('fs');
  });
  afterEach(async () => {
    await storage.dispose();
  });
  const fresh = () => Broker.open({ storage: storage.storage });
  /** A broker over the same data as the one before (a process restart). */
  const reopen = async () => Broker.open({ storage: await storage.reopen() });

  it('keeps durable exchanges and their bindings across a reopen, without transient ones', async () => {
    {
      await using broker = await fresh();
      const ex = await broker.exchange('logs', 'topic', {
        arguments: { 'alternate-exchange': 'amq.fanout' },
      });
      await broker.exchange('scratch', 'fanout', { durable: false });
      const errors = await broker.queue('errors');
      const temp = await broker.queue('temp', { durable: false });
      await errors.bind(ex, '*.error');
      await temp.bind(ex, '#');
      await (await broker.queue('rest')).bind('amq.fanout');
    }
    await using broker = await reopen();
    expect(broker.exchanges().filter((e) => !e.name.startsWith('amq.') && e.name !== '')).toEqual([
      {
        name: 'logs',
        type: 'topic',
        durable: true,
        autoDelete: false,
        internal: false,
        arguments: { 'alternate-exchange': 'amq.fanout' },
        bindingCount: 1,
      },
    ]);
    expect(broker.bindings('errors')).toEqual([
      { source: 'logs', routingKey: '*.error', args: {} },
    ]);
    const logs = await broker.exchange('logs', 'topic', {
      arguments: { 'alternate-exchange': 'amq.fanout' },
    });
    await logs.publish('e', { routingKey: 'db.error' });
    await logs.publish('i', { routingKey: 'db.info' });
    expect(await drain(await broker.queue('errors'))).toEqual(['e']);
    expect(await drain(await broker.queue('rest'))).toEqual(['i']);
  });

  it('persists an unbind and an exchange deletion', async () => {
    {
      await using broker = await fresh();
      const ex = await broker.exchange('x', 'direct');
      await broker.exchange('gone', 'direct');
      const q = await broker.queue('q');
      await q.bind(ex, 'a');
      await q.bind(ex, 'b');
      await q.unbind(ex, 'a');
      await broker.deleteExchange('gone');
    }
    await using broker = await reopen();
    expect(broker.bindings('q')).toEqual([{ source: 'x', routingKey: 'b', args: {} }]);
    expect(broker.exchanges().some((e) => e.name === 'gone')).toBe(false);
  });
});
