import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { NoRouteError, PreconditionFailedError } from '../../src/errors.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

const DEDUP = { 'x-message-deduplication': true };
const once = (value: string, extra = {}) => ({
  headers: { 'x-deduplication-header': value, ...extra },
});

async function bodies(broker: Broker, queue: string): Promise<string[]> {
  const q = await broker.queue(queue, { passive: true });
  const out: string[] = [];
  for (let m = await q.get(); m; m = await q.get()) out.push(m.bodyString());
  return out;
}

describe('deduplication on the broker', () => {
  it('an exchange routes a duplicate nowhere, refusing it with 312 when mandatory', async () => {
    await using broker = await Broker.open();
    const ex = await broker.exchange('orders', 'fanout', { arguments: DEDUP });
    await (await broker.queue('a')).bind('orders');
    await (await broker.queue('b')).bind('orders');
    await ex.publish('first', once('o1'));
    await ex.publish('again', once('o1'));
    await expect(ex.publish('again', { ...once('o1'), mandatory: true })).rejects.toThrow(
      NoRouteError,
    );
    await ex.publish('other', once('o2'));
    expect(await bodies(broker, 'a')).toEqual(['first', 'other']);
    expect(await bodies(broker, 'b')).toEqual(['first', 'other']);
    expect(broker.stats().deduplicated).toEqual({ exchanges: { orders: 2 }, queues: {} });
  });

  it('a queue takes a duplicate as routed but does not store it', async () => {
    await using broker = await Broker.open();
    const ex = await broker.exchange('orders', 'fanout');
    await (await broker.queue('dedup', { arguments: DEDUP })).bind('orders');
    await (await broker.queue('plain')).bind('orders');
    await ex.publish('first', once('o1'));
    await ex.publish('again', { ...once('o1'), mandatory: true });
    expect(await bodies(broker, 'dedup')).toEqual(['first']);
    expect(await bodies(broker, 'plain')).toEqual(['first', 'again']);
    expect(broker.stats().deduplicated.queues).toEqual({ dedup: 1 });
    // Its only target dropping it, a mandatory duplicate is returned, as LavinMQ returns it.
    const q = await broker.queue('dedup', { passive: true });
    await q.publish('x', once('o9'));
    await expect(
      broker.publish('', 'x', { routingKey: 'dedup', ...once('o9'), mandatory: true }),
    ).rejects.toThrow(NoRouteError);
  });

  it('a duplicate sent to a queue by its name does not stop the next message reaching it', async () => {
    await using broker = await Broker.open();
    await broker.queue('dedup', { arguments: DEDUP });
    const send = (body: string, id: string) =>
      broker.publish('', body, { routingKey: 'dedup', ...once(id) });
    await send('first', 'o1');
    await send('again', 'o1');
    await send('second', 'o2');
    await send('third', 'o3');
    expect(await bodies(broker, 'dedup')).toEqual(['first', 'second', 'third']);
  });

  it('forgets an id after x-cache-ttl ms of the broker’s clock', async () => {
    const clock = new ManualClock(0);
    await using broker = await Broker.open({ clock });
    const q = await broker.queue('q', { arguments: { ...DEDUP, 'x-cache-ttl': 60_000 } });
    await q.publish('1', once('a'));
    clock.advance(59_999);
    await q.publish('2', once('a'));
    clock.advance(1);
    await q.publish('3', once('a'));
    expect(await bodies(broker, 'q')).toEqual(['1', '3']);
  });

  it('a redeclare with other deduplication arguments fails with 406', async () => {
    await using broker = await Broker.open();
    await broker.exchange('x', 'direct', { arguments: { ...DEDUP, 'x-cache-size': 2 } });
    await expect(
      broker.exchange('x', 'direct', { arguments: { ...DEDUP, 'x-cache-size': 3 } }),
    ).rejects.toThrow(
      new PreconditionFailedError("Existing exchange 'x' declared with other arguments"),
    );
    await broker.exchange('x', 'direct', { arguments: { ...DEDUP, 'x-cache-size': 2 } });
    await broker.queue('q', { arguments: DEDUP });
    await expect(broker.queue('q', { arguments: { ...DEDUP, 'x-cache-size': 5 } })).rejects.toThrow(
      PreconditionFailedError,
    );
  });

  it('refuses invalid arguments on an exchange or a queue, storing nothing', async () => {
    await using broker = await Broker.open();
    await expect(
      broker.exchange('x', 'direct', { arguments: { ...DEDUP, 'x-cache-size': 'big' } }),
    ).rejects.toThrow(new PreconditionFailedError('x-cache-size header not an integer'));
    await expect(
      broker.queue('q', { arguments: { 'x-message-deduplication': 'yes' } }),
    ).rejects.toThrow(new PreconditionFailedError('x-message-deduplication header not a boolean'));
    expect(broker.exchanges().some((e) => e.name === 'x')).toBe(false);
    expect(broker.queues().some((q) => q.name === 'q')).toBe(false);
  });

  it('strict mode accepts the deduplication arguments', async () => {
    await using broker = await Broker.open({ strict: true, clock: new ManualClock(0) });
    const q = await broker.queue('q', {
      arguments: { ...DEDUP, 'x-cache-size': 10, 'x-cache-ttl': 5, 'x-deduplication-header': 'id' },
    });
    await q.publish('1', { headers: { id: 1 } });
    await q.publish('2', { headers: { id: 1 } });
    expect(await bodies(broker, 'q')).toEqual(['1']);
  });

  it('a deleted and declared-again queue starts with an empty cache', async () => {
    await using broker = await Broker.open();
    await (await broker.queue('q', { arguments: DEDUP })).publish('1', once('a'));
    await broker.deleteQueue('q');
    await (await broker.queue('q', { arguments: DEDUP })).publish('2', once('a'));
    expect(await bodies(broker, 'q')).toEqual(['2']);
  });
});
