/**
 * An edge box: the app writes to a local durable queue and never waits for the network; a shovel
 * forwards what it wrote to the central broker whenever that broker can be reached. Here the
 * central broker is a second mqlite served on a port, stopped and started again to stand for an
 * outage; in production `dest-uri` names a RabbitMQ or LavinMQ cluster.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Broker, fsStorage } from 'mqlite';
import { listen } from 'mqlite/server';

/** Waits for a condition on real sockets, with a deadline. */
async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'edge-'));
const central = await Broker.open();
let server = await listen(central, { port: 0 });
const port = server.port;

// The edge side: a broker on disk, and a shovel stored with it (it starts again after a reboot).
const edge = await Broker.open({ storage: fsStorage({ dir }) });
const readings = await edge.queue('readings', { durable: true });
await edge.setShovel('to-central', {
  'src-uri': 'amqp://', // no host: this broker
  'src-queue': 'readings',
  'dest-uri': `amqp://guest:guest@127.0.0.1:${port}`,
  'dest-queue': 'readings',
  'dest-add-forward-headers': true,
  'reconnect-delay': 0.2, // seconds; RabbitMQ's default is 5
});

const inbox = await central.queue('readings');
await readings.publish({ sensor: 't1', celsius: 21.5 });
// Upstream once the central broker confirmed it and the edge queue let it go.
await until('the first reading upstream', async () => (await edge.shovels())[0]?.forwarded === 1);
console.log('online: central has', inbox.messageCount, 'reading');

await server.close(); // the network goes away
await until('the shovel to notice', async () => (await edge.shovels())[0]?.state === 'terminated');
for (const celsius of [21.7, 21.9, 22.4]) await readings.publish({ sensor: 't1', celsius });
const [offline] = await edge.shovels();
console.log(`offline: shovel ${offline?.state}, ${offline?.pending} readings waiting on the edge`);
console.log('the password never shows:', offline?.destination.replace(`:${port}`, ':PORT'));

server = await listen(central, { port }); // and comes back
await until('every reading upstream', () => inbox.messageCount === 4);
const [online] = await edge.shovels();
console.log(`back online: shovel ${online?.state}, central has ${inbox.messageCount} readings`);
const last = await inbox.get({ noAck: true });
console.log(
  'first reading:',
  last?.bodyToString(),
  'via',
  last?.properties.headers?.['x-shovelled'] ? 'the shovel' : '?',
);

await edge.close();
await server.close();
await central.close();
rmSync(dir, { recursive: true, force: true });
