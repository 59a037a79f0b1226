/**
 * The two clients the wire benchmarks drive, behind one shape: amqplib (the most used) and
 * @cloudamqp/amqp-client. Each publishes as fast as its socket takes the bytes, with a window of
 * unconfirmed publishes when confirms are on, and consumes with a prefetch, acking each message
 * as an application does.
 */
import { AMQPClient } from '@cloudamqp/amqp-client';
import amqplib from 'amqplib';

/** Unconfirmed publishes a confirming publisher keeps in flight; also the consumers' prefetch. */
export const WINDOW = 1000;
export const BODY = Buffer.alloc(100, 'x');

export interface WireClient {
  /** Publishes `n` bodies to `queue` by the default exchange; resolves once all are confirmed. */
  publish(queue: string, n: number, confirm: boolean): Promise<void>;
  /** Consumes `n` messages from `queue`, acking each; resolves once the last is acked. */
  consume(queue: string, n: number): Promise<void>;
  /** Declares `queue` (not durable) and returns its message count. */
  declare(queue: string): Promise<number>;
  purge(queue: string): Promise<void>;
  delete(queue: string): Promise<void>;
  close(): Promise<void>;
}

export type ClientName = 'amqplib' | 'amqp-client';
export const CLIENTS: readonly ClientName[] = ['amqplib', 'amqp-client'];

export function connect(name: ClientName, url: string): Promise<WireClient> {
  return name === 'amqplib' ? connectAmqplib(url) : connectAmqpClient(url);
}

/**
 * Without confirms a publish is done when the broker has it: polls the queue's count, one round
 * trip at a time, until every message is there.
 */
async function untilCount(client: WireClient, queue: string, n: number): Promise<void> {
  while ((await client.declare(queue)) < n) {}
}

async function connectAmqplib(url: string): Promise<WireClient> {
  const connection = await amqplib.connect(url);
  const channel = await connection.createConfirmChannel();
  // A plain channel for publishes without confirms, and for consuming.
  const plain = await connection.createChannel();
  const client: WireClient = {
    async publish(queue, n, confirm) {
      const target = confirm ? channel : plain;
      let outstanding = 0;
      let wake: (() => void) | undefined;
      let failed: Error | undefined;
      const confirmed = (error: unknown) => {
        if (error) failed = error as Error;
        outstanding--;
        if (wake && (outstanding <= WINDOW / 2 || failed)) {
          wake();
          wake = undefined;
        }
      };
      for (let i = 0; i < n; i++) {
        if (confirm) outstanding++;
        const more = confirm
          ? channel.sendToQueue(queue, BODY, {}, confirmed)
          : target.sendToQueue(queue, BODY);
        if (!more) await new Promise((resolve) => target.once('drain', resolve));
        if (outstanding >= WINDOW) await new Promise<void>((resolve) => (wake = resolve));
        if (failed) throw failed;
      }
      if (confirm) await channel.waitForConfirms();
      else await untilCount(client, queue, n);
    },
    async consume(queue, n) {
      await plain.prefetch(WINDOW);
      let received = 0;
      let tag = '';
      await new Promise<void>((resolve, reject) => {
        plain
          .consume(queue, (message) => {
            if (!message) return reject(new Error('consumer cancelled'));
            plain.ack(message);
            if (++received === n) resolve();
          })
          .then((ok) => {
            tag = ok.consumerTag;
          }, reject);
      });
      await plain.cancel(tag);
    },
    async declare(queue) {
      return (await plain.assertQueue(queue, { durable: false })).messageCount;
    },
    async purge(queue) {
      await plain.purgeQueue(queue);
    },
    async delete(queue) {
      await plain.deleteQueue(queue);
    },
    async close() {
      await connection.close();
    },
  };
  return client;
}

async function connectAmqpClient(url: string): Promise<WireClient> {
  const connection = new AMQPClient(url, undefined, null);
  await connection.connect();
  const confirming = await connection.channel();
  await confirming.confirmSelect();
  const plain = await connection.channel();
  const client: WireClient = {
    async publish(queue, n, confirm) {
      const channel = confirm ? confirming : plain;
      // basicPublish resolves once written (no confirms) or confirmed.
      const inFlight: Promise<number>[] = [];
      for (let i = 0; i < n; i++) {
        inFlight.push(channel.basicPublish('', queue, BODY));
        if (inFlight.length === WINDOW) {
          await Promise.all(inFlight);
          inFlight.length = 0;
        }
      }
      await Promise.all(inFlight);
      if (!confirm) await untilCount(client, queue, n);
    },
    async consume(queue, n) {
      await plain.basicQos(WINDOW);
      let received = 0;
      let done!: () => void;
      const all = new Promise<void>((resolve) => (done = resolve));
      const consumer = await plain.basicConsume(queue, { noAck: false }, (message) => {
        void message.ack();
        if (++received === n) done();
      });
      await all;
      await consumer.cancel();
    },
    async declare(queue) {
      return (await plain.queueDeclare(queue, { durable: false })).messageCount;
    },
    async purge(queue) {
      await plain.queuePurge(queue);
    },
    async delete(queue) {
      await plain.queueDelete(queue);
    },
    async close() {
      await connection.close();
    },
  };
  return client;
}
