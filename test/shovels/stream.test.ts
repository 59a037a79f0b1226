/**
 * A shovel whose source is a stream queue: where it is in the stream is stored with the broker's
 * storage as the source acknowledges, so a broker reopened on it resumes there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { poll } from './poll.js';

const dirs: string[] = [];
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const b of open.splice(0).reverse()) await b.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function reopen(dir: string) {
  const b = await Broker.open({ storage: fsStorage({ dir }) });
  open.push(b);
  return b;
}

const stream = { durable: true, arguments: { 'x-queue-type': 'stream' } } as const;
const definition = {
  'src-uri': 'amqp://',
  'src-queue': 'events',
  'src-consumer-args': { 'x-stream-offset': 'first' },
  'dest-uri': 'amqp://',
  'dest-queue': 'out',
};

async function bodies(b: Broker, count: number): Promise<string[]> {
  const out = await b.queue('out');
  await poll(
    async () => (await b.shovels())[0],
    (s) => out.messageCount >= count && s?.inFlight === 0,
    `${count} messages in out`,
  );
  const got: string[] = [];
  for (let m = await out.get({ noAck: true }); m; m = await out.get({ noAck: true })) {
    got.push(m.bodyString());
  }
  return got;
}

test('a broker reopened on its storage resumes a stream shovel where it was: nothing sent twice, nothing skipped', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-shovel-stream-'));
  dirs.push(dir);
  const first = await reopen(dir);
  const events = await first.queue('events', stream);
  for (const body of ['e0', 'e1', 'e2']) await events.publish(body);
  await first.setShovel('replay', definition);
  expect(await bodies(first, 3)).toEqual(['e0', 'e1', 'e2']);
  await first.close();

  const second = await reopen(dir);
  const again = await second.queue('events', stream);
  for (const body of ['e3', 'e4']) await again.publish(body);
  // From `first` again, the stream would come round whole: e0, e1, e2, e3, e4.
  expect(await bodies(second, 2)).toEqual(['e3', 'e4']);
  expect((await second.shovels())[0]?.forwarded).toBe(2);
  await second.close();

  const third = await reopen(dir);
  await (await third.queue('events', stream)).publish('e5');
  expect(await bodies(third, 1)).toEqual(['e5']);
});

test('a new definition of a stream shovel starts where its consumer arguments say', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-shovel-stream-'));
  dirs.push(dir);
  const b = await reopen(dir);
  const events = await b.queue('events', stream);
  for (const body of ['e0', 'e1']) await events.publish(body);
  await b.setShovel('replay', definition);
  expect(await bodies(b, 2)).toEqual(['e0', 'e1']);
  await b.setShovel('replay', { ...definition, 'dest-add-timestamp-header': true });
  expect(await bodies(b, 2)).toEqual(['e0', 'e1']);
});

test('a shovel from a stream of a served broker resumes where it was after its own broker reopens', async () => {
  const remote = await Broker.open();
  open.push(remote);
  const server = await listen(remote, { port: 0 });
  open.push(server);
  const events = await remote.queue('events', stream);
  for (const body of ['e0', 'e1']) await events.publish(body);
  const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-shovel-stream-'));
  dirs.push(dir);
  const first = await reopen(dir);
  await first.setShovel('replay', { ...definition, 'src-uri': server.url });
  expect(await bodies(first, 2)).toEqual(['e0', 'e1']);
  await first.close();
  await events.publish('e2');
  const second = await reopen(dir);
  expect(await bodies(second, 1)).toEqual(['e2']);
});
