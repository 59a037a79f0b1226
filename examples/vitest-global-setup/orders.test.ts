import amqplib from 'amqplib';
import { startBroker } from 'mqlite/testing/server';
import { describe, expect, it } from 'vitest';
import { placeOrder } from './orders.js';

describe('placeOrder, against the broker of the run', () => {
  it('sends the order as JSON', async () => {
    await placeOrder('orders-json', { id: 1, item: 'tea' });
    const connection = await amqplib.connect(process.env.AMQP_URL!);
    const channel = await connection.createChannel();
    const message = await channel.get('orders-json', { noAck: true });
    expect(message && JSON.parse(message.content.toString())).toEqual({ id: 1, item: 'tea' });
    await connection.close();
  });
});

describe('a fresh broker per test, when a test must see no other queue', () => {
  it('starts empty', async () => {
    await using rabbit = await startBroker();
    const connection = await amqplib.connect(rabbit.getAmqpUrl());
    const channel = await connection.createChannel();
    await channel.assertQueue('mine');
    // orders-json, declared by the test above on the run's broker, is not here.
    expect(rabbit.broker.queues().map((q) => q.name)).toEqual(['mine']);
    await connection.close();
  });
});
