/**
 * amqp-connection-manager on top of amqplib: its channel wrapper reruns its setup after the
 * server went away and a new one listens on the same port, and what was published while it was
 * down is sent once it is back, and consumed.
 */
import amqp, { type ChannelWrapper } from 'amqp-connection-manager';
import type { Channel, ConsumeMessage } from 'amqplib';
import { describe, expect, test } from 'vitest';
import { listen } from '../../src/server/server.js';
import { servedBroker } from './served.js';

/** Resolves once `done()` holds, checking on each event; rejects after a generous deadline. */
function until(done: () => boolean, what: string): { check: () => void; reached: Promise<void> } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const reached = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 15_000);
  const check = () => {
    if (!done()) return;
    clearTimeout(timer);
    resolve();
  };
  return { check, reached };
}

/** Polls `done` until it holds, with a generous deadline. */
async function poll(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('amqp-connection-manager against the server', () => {
  const served = servedBroker();

  test('the channel wrapper reconnects to a new listen() on the port; messages published meanwhile are delivered', async () => {
    const port = served.server.port;
    const received: string[] = [];
    let setups = 0;
    const connection = amqp.connect([served.server.url], { reconnectTimeInSeconds: 0.05 });
    const wrapper: ChannelWrapper = connection.createChannel({
      setup: async (channel: Channel) => {
        setups++;
        await channel.assertQueue('orders', { durable: false });
        await channel.prefetch(10);
        await channel.consume('orders', (msg: ConsumeMessage | null) => {
          if (!msg) return;
          received.push(msg.content.toString());
          progress.check();
          channel.ack(msg);
        });
      },
    });
    let progress = until(() => received.includes('before'), 'the first message');
    await wrapper.waitForConnect();
    await wrapper.sendToQueue('orders', Buffer.from('before'));
    await progress.reached;
    // Its ack is in: else the server going away would requeue it (and redeliver it, rightly).
    const orders = await served.broker.queue('orders', { durable: false });
    await poll(() => orders.stats().messages === 0, 'the ack of the first message');

    const disconnected = new Promise<void>((resolve) =>
      connection.once('disconnect', () => resolve()),
    );
    await served.server.close();
    await disconnected;
    expect(connection.isConnected()).toBe(false);

    // Published while nothing listens: the wrapper keeps them and sends them once reconnected.
    progress = until(() => received.includes('while-down-2'), 'the messages published while down');
    const sent = Promise.all([
      wrapper.sendToQueue('orders', Buffer.from('while-down-1')),
      wrapper.sendToQueue('orders', Buffer.from('while-down-2')),
    ]);
    const reconnected = new Promise<void>((resolve) => connection.once('connect', () => resolve()));
    served.server = await listen(served.broker, { port });
    await reconnected;
    await sent;
    await progress.reached;

    expect(setups).toBe(2);
    expect(received).toEqual(['before', 'while-down-1', 'while-down-2']);
    expect(served.server.connections).toBe(1);
    await wrapper.close();
    await connection.close();
    await orders.delete();
  });
});
