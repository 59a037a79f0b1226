/**
 * The server's memory and disk alarms, as RabbitMQ's: while the data directory's disk is short of
 * space, a publishing connection is blocked (amqplib emits `blocked`), its publish held, and it
 * goes on once space is back. The free-space reading is injected and taken on a ManualClock, so
 * this runs without filling a disk.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import amqplib from 'amqplib';
import { Broker, fsStorage } from 'mqlite';
import { listen } from 'mqlite/server';
import { ManualClock } from 'mqlite/testing';

const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-alarms-'));
let free = 10_000_000_000;
const clock = new ManualClock();
const broker = await Broker.open({ storage: fsStorage({ dir }) });
const server = await listen(broker, {
  clock,
  // RabbitMQ's disk_free_limit, in its own syntax; `read` stands in for statfs of `dir`.
  disk: { dir, freeLimit: '50MB', read: () => free },
  memory: { relative: 0.4 },
});

/** Waits for a real event (a socket, a delivery), with a deadline. */
async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const jobs = await broker.queue('jobs', { durable: true });
const connection = await amqplib.connect(server.url);
const events: string[] = [];
connection.on('blocked', (reason: string) => events.push(`publisher blocked: ${reason}`));
connection.on('unblocked', () => events.push('publisher unblocked'));
const channel = await connection.createChannel();

free = 10_000_000; // 10 MB left: below the limit at the next reading, a second later
clock.advance(1000);
console.log('alarms:', JSON.stringify(server.alarms()));
channel.sendToQueue('jobs', Buffer.from('report'), { persistent: true });
await until('connection.blocked', () => events.length === 1);
console.log(events[0]);
console.log('stored while blocked:', jobs.stats().messages);

free = 5_000_000_000; // space freed
clock.advance(1000);
await until('the held publish', () => jobs.stats().messages === 1 && events.length === 2);
console.log(events[1]);
console.log('stored once unblocked:', jobs.stats().messages);
console.log('alarms:', JSON.stringify(server.alarms()));

await connection.close();
await server.close();
await broker.close();
rmSync(dir, { recursive: true, force: true });
