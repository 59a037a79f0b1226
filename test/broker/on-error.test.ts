import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { ErrorContext } from '../../src/diagnostics.js';
import { ClosedError } from '../../src/errors.js';
import type { Message } from '../../src/message/message.js';
import { PriorityQueue } from '../../src/queues/priority-queue.js';
import { StreamQueue } from '../../src/queues/stream/stream-queue.js';
import { memoryStorage } from '../../src/storage/memory.js';
import type { Log, Namespace, StorageAdapter } from '../../src/storage/types.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

/** An `onError` that records what it is told. */
function recorder() {
  const reported: { message: string; context: ErrorContext }[] = [];
  const onError = (error: unknown, context: ErrorContext) => {
    reported.push({ message: (error as Error).message, context });
  };
  return { reported, onError };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Waits, a turn at a time, until `check` holds (with a deadline of turns, not of time). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !check(); i++) await turn();
  expect(check()).toBe(true);
}

/** A memory storage whose logs' `method` throws `error` while `failing.on` is set. */
function storageFailing(method: keyof Log<unknown>, error: Error) {
  const failing = { on: false };
  const inner = memoryStorage();
  const wrapLog = <T>(log: Log<T>): Log<T> =>
    new Proxy(log, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === method && failing.on) {
          return () => {
            throw error;
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const wrapNamespace = (ns: Namespace): Namespace =>
    new Proxy(ns, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === 'openLog') {
          return async (...args: Parameters<Namespace['openLog']>) =>
            wrapLog(await target.openLog(...args));
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  const storage = new Proxy(inner, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key === 'namespace') {
        return async (name: string) => wrapNamespace(await target.namespace(name));
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as StorageAdapter;
  return { storage, failing };
}

describe('errors nobody awaits reach onError with their context', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('reports a noAck consumer whose callback throws or rejects', async () => {
    const { reported, onError } = recorder();
    await using broker = await Broker.open({ onError });
    const q = await broker.queue('jobs');
    await q.subscribe({ tag: 'worker', noAck: true }, (m) => {
      if (m.bodyString() === 'sync') throw new Error('sync boom');
      return Promise.reject(new Error('async boom'));
    });
    await q.publish('sync');
    await q.publish('async');
    await until(() => reported.length === 2);
    expect(reported).toEqual([
      {
        message: 'sync boom',
        context: { source: 'consumer', queue: 'jobs', consumerTag: 'worker' },
      },
      {
        message: 'async boom',
        context: { source: 'consumer', queue: 'jobs', consumerTag: 'worker' },
      },
    ]);
  });

  it('reports each failed attempt of a consumer under a delivery limit, then dead-letters', async () => {
    const { reported, onError } = recorder();
    await using broker = await Broker.open({ onError });
    const dlq = await broker.queue('dlq');
    const q = await broker.queue('jobs', {
      arguments: {
        'x-delivery-limit': 1,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'dlq',
      },
    });
    await q.subscribe({ tag: 'worker' }, () => {
      throw new Error('always fails');
    });
    await q.publish('job');
    await until(() => dlq.messageCount === 1);
    expect(reported.map((r) => r.message)).toEqual(['always fails', 'always fails']);
    expect(reported[0]!.context).toEqual({
      source: 'consumer',
      queue: 'jobs',
      consumerTag: 'worker',
    });
  });

  it('reports a manualAck callback that rejects, and a stream consumer that throws', async () => {
    const { reported, onError } = recorder();
    await using broker = await Broker.open({ onError });
    const q = await broker.queue('jobs');
    await q.subscribe({ tag: 'manual', manualAck: true }, async (m: Message) => {
      await m.ack();
      throw new Error('after ack');
    });
    const events = await broker.queue('events', { arguments: { 'x-queue-type': 'stream' } });
    await events.subscribe({ tag: 'reader', args: { 'x-stream-offset': 'first' } }, () => {
      throw new Error('stream boom');
    });
    await q.publish('x');
    await events.publish('e');
    await until(() => reported.length >= 2);
    expect(reported).toContainEqual({
      message: 'after ack',
      context: { source: 'consumer', queue: 'jobs', consumerTag: 'manual' },
    });
    expect(reported).toContainEqual({
      message: 'stream boom',
      context: { source: 'consumer', queue: 'events', consumerTag: 'reader' },
    });
  });

  it('reports a last-value queue browser whose callback throws, and the browser goes on', async () => {
    const { reported, onError } = recorder();
    await using broker = await Broker.open({ onError });
    const prices = await broker.queue('prices', {
      arguments: { 'qpid.last_value_queue_key': 'symbol' },
    });
    const seen: string[] = [];
    const browser = prices.browse((m) => {
      seen.push(m.bodyString());
      if (seen.length === 1) throw new Error('browse boom');
    });
    await prices.publish('a', { headers: { symbol: 'A' } });
    await prices.publish('b', { headers: { symbol: 'B' } });
    await until(() => seen.length === 2);
    expect(reported).toEqual([
      {
        message: 'browse boom',
        context: { source: 'browser', queue: 'prices', consumerTag: browser.consumerTag },
      },
    ]);
  });

  it('reports a queue that failed to delete itself on x-expires', async () => {
    const { reported, onError } = recorder();
    const clock = new ManualClock();
    const inner = memoryStorage();
    const storage = new Proxy(inner, {
      get(target, key) {
        if (key === 'deleteNamespace') return () => Promise.reject(new Error('disk gone'));
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as StorageAdapter;
    const q = await PriorityQueue.open({
      name: 'temp',
      maxPriority: 1,
      storage,
      clock,
      arguments: { 'x-expires': 100 },
      onError,
    });
    clock.advance(100);
    await until(() => reported.length === 1);
    expect(reported[0]).toEqual({
      message: 'disk gone',
      context: { source: 'queue-delete', queue: 'temp' },
    });
    await inner.close();
    expect(q.closed).toBe(true);
  });

  it("reports a stream's retention that fails on its timer instead of throwing from it", async () => {
    const { reported, onError } = recorder();
    const clock = new ManualClock();
    const { storage, failing } = storageFailing('dropBefore', new Error('cannot drop'));
    const stream = await StreamQueue.open({
      name: 's',
      storage,
      clock,
      arguments: { 'x-max-age': '10s', 'x-stream-max-segment-size-bytes': 1 },
      onError,
    });
    await stream.publish('one');
    await stream.publish('two');
    failing.on = true;
    clock.advance(20_000);
    expect(reported).toEqual([
      { message: 'cannot drop', context: { source: 'retention', queue: 's' } },
    ]);
    failing.on = false;
    await stream.close();
    await storage.close();
  });

  it('warns by default, naming the source and the queue, and stays quiet about ClosedError', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const q = await PriorityQueue.open({ name: 'alone', maxPriority: 1 });
    await q.subscribe({ noAck: true }, () => {
      throw new Error('unseen before');
    });
    await q.publish('x');
    await until(() => warn.mock.calls.length === 1);
    const [error, options] = warn.mock.calls[0]!;
    expect((error as Error).message).toBe('unseen before');
    expect(options).toEqual({
      type: 'MqliteWarning',
      detail: "reported by mqlite (consumer on queue 'alone')",
    });
    await q.subscribe({ noAck: true }, () => {
      throw new ClosedError('gone');
    });
    await q.publish('y');
    await turn();
    expect(warn.mock.calls.length).toBeLessThanOrEqual(2);
    await q.close();
  });
});
