/**
 * The broker, its sessions and their handles satisfy the narrow interfaces of
 * `@cloudamqp/amqp-client` 4.x. The assignments below are the proof: `npm run typecheck` fails if
 * one stops holding; the test bodies run them too, so the proof is exercised, not only compiled.
 */
import type {
  AMQPExchangeLike,
  AMQPMessage,
  AMQPQueueLike,
  AMQPSessionLike,
  AMQPSubscriptionLike,
} from '@cloudamqp/amqp-client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Message } from '../../src/message/message.js';

describe('the AMQPSessionLike interface of @cloudamqp/amqp-client', () => {
  it('is satisfied by the broker, its queues, exchanges and subscriptions', async () => {
    await using broker = await Broker.open();
    const session: AMQPSessionLike = broker;
    const queue: AMQPQueueLike = await session.queue('jobs', { durable: false });
    const exchange: AMQPExchangeLike = await session.directExchange();
    const subscription: AMQPSubscriptionLike = await queue.subscribe(
      { noAck: false },
      (_msg: AMQPMessage) => {},
    );
    await queue.bind('amq.direct', 'jobs');
    await exchange.publish('x', { routingKey: 'jobs' });
    await subscription.cancel();
    await session.stop();
    expect(session.closed).toBe(true);
  });

  it('is satisfied by a broker session', async () => {
    await using broker = await Broker.open();
    const session: AMQPSessionLike = broker.session();
    for (const declare of [
      session.exchange('logs', 'topic'),
      session.fanoutExchange(),
      session.topicExchange(),
      session.headersExchange(),
    ]) {
      expectTypeOf(await declare).toExtend<AMQPExchangeLike>();
    }
    await session.stop();
    expect(session.closed).toBe(true);
  });

  it("types deliveries as mqlite's Message unless a message class is named", async () => {
    await using broker = await Broker.open();
    const queue = await broker.queue('q');
    expectTypeOf(queue.get()).resolves.toEqualTypeOf<Message | null>();
    expectTypeOf(queue.get<AMQPMessage>()).resolves.toEqualTypeOf<AMQPMessage | null>();
    const consumeOne = () => queue.consumeOne();
    expectTypeOf(consumeOne).returns.resolves.toEqualTypeOf<Message>();
    await queue.subscribe({}, (msg) => {
      expectTypeOf(msg).toEqualTypeOf<Message>();
    });
  });
});
