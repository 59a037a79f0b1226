/**
 * Testing a worker's reconnect logic: its connection dropped, then the broker restarted, with
 * the worker's backoff on a ManualClock, so the test decides when the retry is due instead of
 * sleeping for it.
 */
import amqplib from 'amqplib';
import type { Clock } from 'mqlite';
import { startBroker } from 'mqlite/testing/server';

/** The code under test: a worker that reconnects one second after it lost its connection. */
class Worker {
  readonly done: string[] = [];
  connected = false;
  constructor(
    private readonly url: string,
    private readonly clock: Clock,
  ) {}

  async start(): Promise<void> {
    const connection = await amqplib.connect(this.url, {
      clientProperties: { connection_name: 'worker' },
    });
    connection.on('error', () => {});
    connection.once('close', () => {
      this.connected = false;
      this.clock.setTimeout(() => void this.start().catch(() => {}), 1000);
    });
    const channel = await connection.createChannel();
    await channel.assertQueue('jobs', { durable: true });
    await channel.consume('jobs', (msg) => {
      if (!msg) return;
      this.done.push(msg.content.toString());
      channel.ack(msg);
    });
    this.connected = true;
  }
}

/** Waits for a real event (a socket, a delivery), with a deadline. */
async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

await using rabbit = await startBroker({ storage: 'fs', clock: true });
const worker = new Worker(rabbit.getAmqpUrl(), rabbit.clock);
await worker.start();

/**
 * An ack is a one-way frame: until the broker has read it, the delivery is unacknowledged, and a
 * connection lost or a broker restarted then delivers it again (at least once, as on RabbitMQ).
 * The test waits for the broker to hold nothing before it breaks the connection.
 */
function acked(queue: string): boolean {
  return rabbit.broker.queues().find((q) => q.name === queue)?.messages === 0;
}

/** Publishes a persistent job from a connection of its own, as the application does. */
async function publish(job: string): Promise<void> {
  const connection = await amqplib.connect(rabbit.getAmqpUrl());
  const channel = await connection.createConfirmChannel();
  channel.sendToQueue('jobs', Buffer.from(job), { persistent: true });
  await channel.waitForConfirms();
  await connection.close();
}

await publish('job 1');
await until('job 1', () => worker.done.includes('job 1'));
await until('the ack of job 1', () => acked('jobs'));
console.log(`done: ${worker.done.join(', ')}`);

// The network drops the worker's connection: no close frame, the socket is simply gone.
await rabbit.faults.close({ name: 'worker' }, { drop: true });
await until('the worker to notice', () => !worker.connected);
await publish('job 2');
rabbit.clock.advance(999);
console.log(`dropped; 999 ms later connected: ${worker.connected}`);
rabbit.clock.advance(1);
await until('the reconnect', () => worker.connected);
await until('job 2', () => worker.done.includes('job 2'));
console.log(`1 ms more: reconnected, done: ${worker.done.join(', ')}`);
await until('the ack of job 2', () => acked('jobs'));

// The broker restarts: every connection closed (320), durable queues back from disk.
await rabbit.restart();
await until('the worker to notice', () => !worker.connected);
await publish('job 3');
rabbit.clock.advance(1000);
await until('the reconnect', () => worker.connected);
await until('job 3', () => worker.done.includes('job 3'));
console.log(`restarted; reconnected, done: ${worker.done.join(', ')}`);
