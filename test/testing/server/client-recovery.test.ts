/**
 * The recovery code of the clients that reconnect on their own, through each fault a test can
 * inject: what each documents holds. Messages published while down are sent after the reconnect
 * and their confirms come; consumers are re-established and receive them. A redelivery after a
 * fault is at-least-once delivery, not a failure: receipts are checked with `toContain`.
 */
import { AMQPSession } from '@cloudamqp/amqp-client';
import amqp from 'amqp-connection-manager';
import type { Channel } from 'amqplib';
import amqplib from 'amqplib';
import { Connection } from 'rabbitmq-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StartedBroker, startBroker } from '../../../src/testing/server/index.js';

const FAULTS: [string, (broker: StartedBroker) => Promise<unknown>][] = [
  ['a forced close (320)', (broker) => broker.faults.close()],
  ['a dropped socket', (broker) => broker.faults.close({}, { drop: true })],
  [
    'a drop followed by two refused attempts',
    async (broker) => {
      broker.faults.refuse(2);
      await broker.faults.close({}, { drop: true });
    },
  ],
  [
    'a drop followed by a handshake refused with 530',
    async (broker) => {
      broker.faults.refuse(1, 530);
      await broker.faults.close({}, { drop: true });
    },
  ],
  [
    'a stall, which the heartbeat check detects',
    async (broker) => {
      broker.faults.stall();
    },
  ],
  ['a restart', (broker) => broker.restart()],
];

/** Generous: a loaded machine; the clients' own retry delays are set short below. */
const DEADLINE = { timeout: 20_000, interval: 20 };

let broker: StartedBroker;
beforeEach(async () => {
  // A 1 s heartbeat, so a stalled connection is given up within seconds.
  broker = await startBroker({ storage: 'fs', server: { heartbeat: 1 } });
});
afterEach(async () => {
  await broker.stop();
});

/** Every refused attempt was spent: the client retried through them. */
async function refusalsSpent(): Promise<void> {
  await expect.poll(() => broker.faults.refusing, DEADLINE).toBe(0);
}

describe.each(FAULTS)('through %s', (_name, inject) => {
  it('amqp-connection-manager: published while down is confirmed and consumed by the re-set-up consumer', async () => {
    const received: string[] = [];
    let setups = 0;
    const connection = amqp.connect([broker.url], { reconnectTimeInSeconds: 0.05 });
    const wrapper = connection.createChannel({
      setup: async (channel: Channel) => {
        setups++;
        await channel.assertQueue('acm-jobs', { durable: true });
        await channel.consume('acm-jobs', (msg) => {
          if (!msg) return;
          received.push(msg.content.toString());
          channel.ack(msg);
        });
      },
    });
    try {
      await wrapper.sendToQueue('acm-jobs', Buffer.from('before'), { persistent: true });
      await expect.poll(() => received, DEADLINE).toContain('before');
      const down = new Promise((resolve) => connection.once('disconnect', resolve));
      await inject(broker);
      await down;
      // The wrapper keeps what is published while it is down, and resolves on its confirm.
      await wrapper.sendToQueue('acm-jobs', Buffer.from('during'), { persistent: true });
      await expect.poll(() => received, DEADLINE).toContain('during');
      expect(setups).toBeGreaterThanOrEqual(2);
      await refusalsSpent();
    } finally {
      await connection.close();
    }
  });

  it("rabbitmq-client: a confirmed publisher's send while down resolves, and the consumer resumes", async () => {
    const received: string[] = [];
    const rabbit = new Connection({ url: broker.url, retryLow: 20, retryHigh: 100 });
    rabbit.on('error', () => {});
    const consumer = rabbit.createConsumer(
      { queue: 'rc-jobs', queueOptions: { durable: true } },
      (msg) => {
        received.push(String(msg.body));
      },
    );
    consumer.on('error', () => {});
    // Declared by the publisher too: its first send must not race the consumer's declaration.
    const publisher = rabbit.createPublisher({
      confirm: true,
      maxAttempts: 5,
      queues: [{ queue: 'rc-jobs', durable: true }],
    });
    try {
      await publisher.send({ routingKey: 'rc-jobs', durable: true }, 'before');
      await expect.poll(() => received, DEADLINE).toContain('before');
      await inject(broker);
      await publisher.send({ routingKey: 'rc-jobs', durable: true }, 'during');
      await expect.poll(() => received, DEADLINE).toContain('during');
      await refusalsSpent();
    } finally {
      await publisher.close();
      await consumer.close();
      await rabbit.close();
    }
  });

  it("amqp-client's AMQPSession: the subscription is recovered and receives what is published after", async () => {
    const received: string[] = [];
    let connects = 0;
    const session = await AMQPSession.connect(broker.url, {
      // Without heartbeats amqp-client never notices a stalled connection.
      heartbeat: 1,
      reconnectInterval: 20,
      maxReconnectInterval: 100,
      onconnect: () => connects++,
    });
    try {
      const queue = await session.queue('session-jobs', { durable: true });
      await queue.subscribe({ noAck: false }, async (msg) => {
        received.push(msg.bodyString() ?? '');
        await msg.ack();
      });
      await queue.publish('before');
      await expect.poll(() => received, DEADLINE).toContain('before');
      await inject(broker);
      // It documents consumer recovery, not publishes held while down: publish once back.
      await expect.poll(() => connects, DEADLINE).toBe(2);
      await queue.publish('after');
      await expect.poll(() => received, DEADLINE).toContain('after');
      await refusalsSpent();
    } finally {
      await session.stop();
    }
  });

  it("amqplib's recovery: setup reruns after the reconnect and its consumer receives again", async () => {
    const received: string[] = [];
    let channel: Channel | undefined;
    let setups = 0;
    const connection = await amqplib.connect(broker.url, {
      recovery: {
        initialDelay: 20,
        maxDelay: 100,
        async setup(model: amqplib.ChannelModel) {
          const ch = await model.createChannel();
          await ch.assertQueue('amqplib-jobs', { durable: true });
          await ch.consume('amqplib-jobs', (msg) => {
            if (!msg) return;
            received.push(msg.content.toString());
            ch.ack(msg);
          });
          channel = ch;
          setups++;
        },
      },
    } as amqplib.Options.Connect);
    // A lost socket is an 'error' before the 'disconnect' (an EventEmitter's error: handled).
    connection.on('error', () => {});
    try {
      channel!.sendToQueue('amqplib-jobs', Buffer.from('before'), { persistent: true });
      await expect.poll(() => received, DEADLINE).toContain('before');
      await inject(broker);
      await expect.poll(() => setups, DEADLINE).toBe(2);
      channel!.sendToQueue('amqplib-jobs', Buffer.from('after'), { persistent: true });
      await expect.poll(() => received, DEADLINE).toContain('after');
      await refusalsSpent();
    } finally {
      await connection.close();
    }
  });
});

/**
 * `block()` through each client's own handling of connection.blocked: the event each documents
 * comes with RabbitMQ's reason, what is published while blocked is held by the server (not lost,
 * not routed) and confirmed after `unblock()`.
 */
describe('through connection.blocked', () => {
  /** Messages in `queue` now. */
  const stored = (queue: string) => broker.broker.queues().find((q) => q.name === queue)?.messages;

  /**
   * Blocks, `send`s one message to `queue` and checks that it is held (not stored, not settled)
   * until `unblock()`, with the client's `events` in order.
   */
  async function heldWhileBlocked(
    events: string[],
    queue: string,
    send: () => Promise<unknown>,
  ): Promise<void> {
    const before = stored(queue);
    broker.faults.block();
    let settled = false;
    const sending = send().then(() => {
      settled = true;
    });
    await expect.poll(() => events, DEADLINE).toEqual(['blocked: low on memory']);
    expect(settled).toBe(false);
    expect(stored(queue)).toBe(before);
    broker.faults.unblock();
    await sending;
    expect(events).toEqual(['blocked: low on memory', 'unblocked']);
    expect(stored(queue)).toBe(before! + 1);
  }

  it("amqplib: 'blocked' and 'unblocked' are emitted; a confirm held while blocked comes after", async () => {
    const connection = await amqplib.connect(broker.url);
    const events: string[] = [];
    connection.on('blocked', (reason: string) => events.push(`blocked: ${reason}`));
    connection.on('unblocked', () => events.push('unblocked'));
    try {
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue('amqplib-blocked', { durable: true });
      await heldWhileBlocked(events, 'amqplib-blocked', () => {
        channel.sendToQueue('amqplib-blocked', Buffer.from('held'), { persistent: true });
        return channel.waitForConfirms();
      });
    } finally {
      await connection.close();
    }
  });

  it("amqp-connection-manager: 'blocked' and 'unblocked' are emitted; a send while blocked resolves after", async () => {
    const connection = amqp.connect([broker.url]);
    const events: string[] = [];
    connection.on('blocked', ({ reason }: { reason: string }) => events.push(`blocked: ${reason}`));
    connection.on('unblocked', () => events.push('unblocked'));
    const wrapper = connection.createChannel({
      setup: (channel: Channel) => channel.assertQueue('acm-blocked', { durable: true }),
    });
    try {
      await wrapper.waitForConnect();
      await heldWhileBlocked(events, 'acm-blocked', () =>
        wrapper.sendToQueue('acm-blocked', Buffer.from('held'), { persistent: true }),
      );
    } finally {
      await connection.close();
    }
  });

  it("rabbitmq-client: 'connection.blocked' and 'connection.unblocked' are emitted; a confirmed send resolves after", async () => {
    const rabbit = new Connection({ url: broker.url, retryLow: 20, retryHigh: 100 });
    rabbit.on('error', () => {});
    const events: string[] = [];
    rabbit.on('connection.blocked', (reason: string) => events.push(`blocked: ${reason}`));
    rabbit.on('connection.unblocked', () => events.push('unblocked'));
    const publisher = rabbit.createPublisher({
      confirm: true,
      queues: [{ queue: 'rc-blocked', durable: true }],
    });
    try {
      await publisher.send({ routingKey: 'rc-blocked', durable: true }, 'before');
      await heldWhileBlocked(events, 'rc-blocked', () =>
        publisher.send({ routingKey: 'rc-blocked', durable: true }, 'held'),
      );
    } finally {
      await publisher.close();
      await rabbit.close();
    }
  });

  it("amqp-client's AMQPSession: onblocked/onunblocked are called; a publish while blocked is refused, and accepted after", async () => {
    const events: string[] = [];
    const session = await AMQPSession.connect(broker.url, {
      onblocked: (reason: string) => events.push(`blocked: ${reason}`),
      onunblocked: () => events.push('unblocked'),
    });
    try {
      const queue = await session.queue('session-blocked', { durable: true });
      broker.faults.block();
      // The publish that meets the alarm is held by the server; amqp-client refuses later ones
      // while blocked, as it documents.
      const held = queue.publish('held');
      await expect.poll(() => events, DEADLINE).toEqual(['blocked: low on memory']);
      await expect(queue.publish('refused')).rejects.toThrow(
        /Connection blocked by server: low on memory/,
      );
      broker.faults.unblock();
      await held;
      await expect.poll(() => events, DEADLINE).toEqual(['blocked: low on memory', 'unblocked']);
      await queue.publish('after');
      await expect.poll(() => stored('session-blocked'), DEADLINE).toBe(2);
    } finally {
      await session.stop();
    }
  });
});
