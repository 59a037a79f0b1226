/**
 * Data directories for tests: fresh empty ones (removed after the file's tests), copies of the format fixtures, a directory a
 * broker wrote with a queue of every kind, and a hash of a whole directory (paths and bytes) to
 * prove a command changed nothing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Broker } from '../../src/broker/broker.js';
import { fsStorage } from '../../src/storage/fs/index.js';

const fixtures = fileURLToPath(new URL('../storage/fixtures/', import.meta.url));
const made: string[] = [];

/**
 * A new empty directory, removed by {@link removeDataDirs}; its real path (the simulated disks of
 * the power-cut tests compare paths as written).
 */
export function tempDir(): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(tmpdir(), 'mqlite-test-data-')));
  made.push(dir);
  return dir;
}

/** Removes every directory made here. */
export function removeDataDirs(): void {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** A copy of the fixture of on-disk format `version` (test/storage/fixtures/fs-v<version>). */
export function copyFixture(version: number): string {
  const dir = path.join(tempDir(), `fs-v${version}`);
  fs.cpSync(path.join(fixtures, `fs-v${version}`), dir, { recursive: true });
  return dir;
}

/** The format versions there are fixtures of. */
export const FIXTURE_VERSIONS = fs
  .readdirSync(fixtures)
  .filter((name) => name.match(/^fs-v\d+$/) !== null)
  .map((name) => Number(name.slice(4)))
  .sort((a, b) => a - b);

/** SHA-256 of every path under `dir` and of every file's bytes and mode. */
export function hashDirectory(dir: string): string {
  const hash = createHash('sha256');
  const walk = (at: string) => {
    for (const name of fs.readdirSync(at).sort()) {
      const file = path.join(at, name);
      const stat = fs.statSync(file);
      hash.update(`${path.relative(dir, file)}\0${stat.mode}\0`);
      if (stat.isDirectory()) walk(file);
      else hash.update(fs.readFileSync(file));
    }
  };
  walk(dir);
  return hash.digest('hex');
}

/**
 * A directory written by a broker: `jobs` (classic, 3 messages, one with a binary body), `urgent`
 * (priority), `events` (a stream of 5, whose consumer `reader` acked the first 3), `prices` (a
 * last-value queue of 3 keys over 4 messages), and the exchange `orders` bound to `jobs`.
 */
export async function brokerDirectory(): Promise<string> {
  const dir = path.join(tempDir(), 'data');
  const broker = await Broker.open({ storage: fsStorage({ dir }) });
  const jobs = await broker.queue('jobs', { durable: true });
  const orders = await broker.exchange('orders', 'direct', { durable: true });
  await jobs.bind('orders', 'new');
  await orders.publish('order 1', { routingKey: 'new', contentType: 'text/plain' });
  await jobs.publish({ order: 2 }, { headers: { attempt: 1 } });
  await jobs.publish(Buffer.from([0xff, 0x00, 0xfe]));
  const urgent = await broker.queue('urgent', {
    durable: true,
    arguments: { 'x-max-priority': 5 },
  });
  await urgent.publish('low', { priority: 1 });
  await urgent.publish('high', { priority: 5 });
  const events = await broker.queue('events', {
    durable: true,
    arguments: { 'x-queue-type': 'stream' },
  });
  for (let i = 1; i <= 5; i++) await events.publish(`event ${i}`);
  let acked = 0;
  const done = new Promise<void>((resolve) => {
    void events.subscribe({ tag: 'reader', manualAck: true, prefetch: 1 }, async (m) => {
      if (acked < 3) {
        await m.ack();
        if (++acked === 3) resolve();
      }
    });
  });
  await done;
  const prices = await broker.queue('prices', {
    durable: true,
    arguments: { 'qpid.last_value_queue_key': 'sym' },
  });
  for (const [sym, price] of [
    ['A', 1],
    ['B', 2],
    ['A', 3],
    ['C', 4],
  ] as const) {
    await prices.publish(String(price), { headers: { sym } });
  }
  await broker.close();
  return dir;
}
