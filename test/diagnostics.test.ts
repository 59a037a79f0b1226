import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../src/broker/broker.js';
import { reportError } from '../src/diagnostics.js';
import {
  CHANNELS,
  type DeadLetterEvent,
  type DropEvent,
  type ErrorEvent,
  type UnroutableEvent,
} from '../src/index.js';
import { PriorityQueue, Queue } from '../src/queues/priority-queue.js';
import { StreamQueue } from '../src/queues/stream/stream-queue.js';
import { ManualClock } from '../src/testing/manual-clock.js';

const listeners: [string, (event: unknown) => void][] = [];

/** Collects what `name` publishes until the test ends. */
function collect<T>(name: string): T[] {
  const events: T[] = [];
  const listener = (event: unknown) => events.push(event as T);
  subscribe(name, listener);
  listeners.push([name, listener]);
  return events;
}

afterEach(() => {
  for (const [name, listener] of listeners.splice(0)) unsubscribe(name, listener);
});

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('diagnostics channels', () => {
  it('are named mqlite:<what>', () => {
    expect(CHANNELS).toEqual({
      deadLetter: 'mqlite:dead-letter',
      drop: 'mqlite:drop',
      unroutable: 'mqlite:unroutable',
      retention: 'mqlite:retention',
      recovery: 'mqlite:recovery',
      error: 'mqlite:error',
      alarm: 'mqlite:alarm',
      fault: 'mqlite:fault',
      shovel: 'mqlite:shovel',
    });
  });

  it('mqlite:drop and mqlite:dead-letter: TTL, drop-head and a delivery limit', async () => {
    const drops = collect<DropEvent>(CHANNELS.drop);
    const deadLetters = collect<DeadLetterEvent>(CHANNELS.deadLetter);
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    await broker.queue('dlq');
    const q = await broker.queue('work', {
      arguments: {
        'x-message-ttl': 1000,
        'x-max-length': 1,
        'x-delivery-limit': 0,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'dlq',
      },
    });
    await q.publish('pushed out');
    await q.publish('expires');
    clock.advance(1000);
    await q.publish('rejected twice');
    const m = await q.get({ noAck: false });
    await m!.nack(true);
    expect(
      drops.map((d) => [
        d.queue,
        d.reason,
        new TextDecoder().decode(d.message.body),
        d.deadLettered,
      ]),
    ).toEqual([
      ['work', 'maxlen', 'pushed out', true],
      ['work', 'expired', 'expires', true],
      ['work', 'delivery_limit', 'rejected twice', true],
    ]);
    expect(deadLetters.map((d) => [d.queue, d.reason, d.exchange, d.routingKey])).toEqual([
      ['work', 'maxlen', '', 'dlq'],
      ['work', 'expired', '', 'dlq'],
      ['work', 'delivery_limit', '', 'dlq'],
    ]);
    expect(deadLetters[0]!.message.properties.headers?.['x-first-death-reason']).toBe('maxlen');
  });

  it('mqlite:drop: a publish refused by reject-publish, and a queue with nowhere to dead-letter', async () => {
    const drops = collect<DropEvent>(CHANNELS.drop);
    const deadLetters = collect<DeadLetterEvent>(CHANNELS.deadLetter);
    const q = await Queue.open({
      name: 'full',
      arguments: {
        'x-max-length': 0,
        'x-overflow': 'reject-publish',
        'x-dead-letter-exchange': '',
      },
    });
    await expect(q.publish('no room')).rejects.toThrow('full');
    expect(drops).toEqual([
      expect.objectContaining({ queue: 'full', reason: 'overflow', deadLettered: false }),
    ]);
    // Standalone, a queue has no router: nothing is dead-lettered.
    expect(deadLetters).toEqual([]);
    await q.close();
  });

  it('mqlite:unroutable: a publish no binding or alternate exchange took, unless mandatory', async () => {
    const unroutable = collect<UnroutableEvent>(CHANNELS.unroutable);
    await using broker = await Broker.open();
    const caught = await broker.queue('caught');
    await broker.exchange('ae', 'fanout');
    await broker.exchange('orders', 'direct');
    await broker.exchange('with-ae', 'direct', { arguments: { 'alternate-exchange': 'ae' } });
    await caught.bind('ae');
    await broker.publish('', 'to no queue', { routingKey: 'missing' });
    await broker.publish('orders', 'no binding', { routingKey: 'eu' });
    await broker.publish('with-ae', 'taken by the alternate exchange', { routingKey: 'eu' });
    const mandatory = broker.publish('orders', 'returned', { routingKey: 'eu', mandatory: true });
    await expect(mandatory).rejects.toMatchObject({ replyCode: 312 });
    expect(
      unroutable.map((e) => [e.exchange, e.routingKey, new TextDecoder().decode(e.message.body)]),
    ).toEqual([
      ['', 'missing', 'to no queue'],
      ['orders', 'eu', 'no binding'],
    ]);
    expect(broker.stats().unroutableDropped).toBe(2);
    expect(caught.messageCount).toBe(1);
  });

  it('mqlite:dead-letter: a message a consumer rejected', async () => {
    const deadLetters = collect<DeadLetterEvent>(CHANNELS.deadLetter);
    const drops = collect<DropEvent>(CHANNELS.drop);
    await using broker = await Broker.open();
    await broker.queue('dlq');
    const q = await broker.queue('work', { deadLetterExchange: '', deadLetterRoutingKey: 'dlq' });
    await q.publish('bad');
    await (await q.get({ noAck: false }))!.reject();
    expect(deadLetters.map((d) => [d.queue, d.reason])).toEqual([['work', 'rejected']]);
    expect(drops).toEqual([]);
  });

  it('mqlite:retention: segments a stream dropped by its limits or a purge', async () => {
    const events = collect(CHANNELS.retention);
    const stream = await StreamQueue.open({
      name: 's',
      arguments: { 'x-max-length': 1, 'x-stream-max-segment-size-bytes': 1 },
    });
    for (const body of ['a', 'b', 'c']) await stream.publish(body);
    await turn();
    expect(events).toEqual([
      { queue: 's', cause: 'retention', messages: 1, firstOffset: 2 },
      { queue: 's', cause: 'retention', messages: 1, firstOffset: 3 },
    ]);
    await stream.close();
  });

  it('mqlite:error: every error nobody awaits, with or without an onError', async () => {
    const errors = collect<ErrorEvent>(CHANNELS.error);
    const seen: unknown[] = [];
    const q = await PriorityQueue.open({ name: 'p', maxPriority: 1, onError: (e) => seen.push(e) });
    const failure = new Error('callback failed');
    await q.subscribe({ tag: 't', noAck: true }, () => {
      throw failure;
    });
    await q.publish('x');
    expect(errors).toEqual([{ error: failure, source: 'consumer', queue: 'p', consumerTag: 't' }]);
    expect(seen).toEqual([failure]);
    await q.close();
  });

  it('an onError that throws does not break the reporter: its error is rethrown on a later turn', () => {
    const later: (() => void)[] = [];
    const spy = vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((task) => {
      later.push(task);
    });
    try {
      const thrown = new Error('handler failed');
      expect(() =>
        reportError(
          () => {
            throw thrown;
          },
          new Error('reported'),
          'expiry',
          'q',
        ),
      ).not.toThrow();
      expect(later).toHaveLength(1);
      expect(later[0]!).toThrow(thrown);
    } finally {
      spy.mockRestore();
    }
  });
});
