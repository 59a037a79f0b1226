/**
 * `broker.queue()` is typed by its options as the broker decides the kind by their values, so
 * kind-specific calls (`latest`, `browse`, `read`, `storedOffset`) need no cast. `npm run
 * typecheck` checks the types; the tests check that the run-time kinds agree with them.
 */
import { describe, expect, expectTypeOf, test } from 'vitest';
import {
  type AnyQueue,
  Broker,
  type BrokerQueue,
  LastValueQueue,
  PriorityQueue,
  Queue,
  type QueueDeclareOptions,
  StreamQueue,
} from '../../src/index.js';

describe('a declared queue is typed by its arguments', () => {
  test('each kind from AMQP arguments and from camelCase options', async () => {
    await using broker = await Broker.open();
    const stream = await broker.queue('s', { arguments: { 'x-queue-type': 'stream' } });
    expectTypeOf(stream).toEqualTypeOf<BrokerQueue<StreamQueue>>();
    expect(stream).toBeInstanceOf(StreamQueue);

    const prio = await broker.queue('p', { arguments: { 'x-max-priority': 9 } });
    expectTypeOf(prio).toEqualTypeOf<BrokerQueue<PriorityQueue>>();
    expect(prio).toBeInstanceOf(PriorityQueue);

    const lvq = await broker.queue('l', { arguments: { 'qpid.last_value_queue_key': 'sym' } });
    expectTypeOf(lvq).toEqualTypeOf<BrokerQueue<LastValueQueue>>();
    expect(lvq).toBeInstanceOf(LastValueQueue);
    expect(lvq.latest('x')).toBeUndefined();

    const lvqOverPriority = await broker.queue('lp', {
      arguments: { 'qpid.last_value_queue': true, 'x-max-priority': 5 },
    });
    expectTypeOf(lvqOverPriority).toEqualTypeOf<BrokerQueue<LastValueQueue>>();
    expect(lvqOverPriority).toBeInstanceOf(LastValueQueue);

    const sugar = await broker.queue('ps', { maxPriority: 3 });
    expectTypeOf(sugar).toEqualTypeOf<BrokerQueue<PriorityQueue>>();
    expect(sugar).toBeInstanceOf(PriorityQueue);

    const streamSugar = await broker.queue('ss', { type: 'stream' });
    expectTypeOf(streamSugar).toEqualTypeOf<BrokerQueue<StreamQueue>>();

    const plain = await broker.queue('q', { durable: true });
    expectTypeOf(plain).toEqualTypeOf<BrokerQueue<Queue>>();
    expect(plain).toBeInstanceOf(Queue);
    const bare = await broker.queue('q');
    expectTypeOf(bare).toEqualTypeOf<BrokerQueue<Queue>>();
  });

  test('options whose type does not tell give the union of every kind', async () => {
    await using broker = await Broker.open();
    const options: QueueDeclareOptions = { arguments: { 'x-max-priority': 2 } };
    const wide = await broker.queue('w', options);
    expectTypeOf(wide).toEqualTypeOf<BrokerQueue<AnyQueue>>();
    expect(wide).toBeInstanceOf(PriorityQueue);

    const args: Record<string, unknown> = { 'x-queue-type': 'stream' };
    const table = await broker.queue('t', { arguments: args });
    expectTypeOf(table).toEqualTypeOf<BrokerQueue<AnyQueue>>();
    expect(table).toBeInstanceOf(StreamQueue);

    const found = await broker.queue('t', { passive: true });
    expectTypeOf(found).toEqualTypeOf<BrokerQueue<AnyQueue>>();
    expect(found).toBe(table);
  });
});
