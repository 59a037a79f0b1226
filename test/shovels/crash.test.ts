/**
 * Store and forward through crashes and outages: an fs-backed `mqlite serve` shovels its queue to
 * a second `mqlite serve` (on disk too). The test publishes with confirms to the first, kills the
 * second with SIGKILL and starts it again, and SIGKILLs the first at several points (right after
 * a batch was confirmed, while the shovel is moving it). In the end every message the first
 * confirmed is on the second at least once, and the duplicates are counted and bounded by the
 * messages in flight at each interruption (the prefetch window).
 */
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import amqplib from 'amqplib';
import { afterAll, describe, expect, test } from 'vitest';
import { startCli } from '../support/cli.js';
import { removeDataDirs, tempDir } from '../support/data-dirs.js';
import { poll } from './poll.js';

const PREFETCH = 20;
const BATCH = 40;
const ROUNDS = 6;

const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  removeDataDirs();
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts `mqlite serve` and resolves with its URL once it listens. */
async function serve(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = await startCli(['serve', ...args]);
  children.add(child);
  let out = '';
  let err = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const found = /amqp:\/\/\S+/.exec(out)?.[0];
      if (found) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, url };
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  children.delete(child);
}

describe('a shovel through crashes and outages', () => {
  test('every message confirmed locally arrives at least once; duplicates stay within the in-flight window', async () => {
    const localDir = tempDir();
    const remoteDir = tempDir();
    const remotePort = await freePort();
    const shovel = JSON.stringify({
      'src-uri': 'amqp://',
      'src-queue': 'outbox',
      'dest-uri': `amqp://guest:guest@127.0.0.1:${remotePort}`,
      'dest-queue': 'inbox',
      'src-prefetch-count': PREFETCH,
      'reconnect-delay': 0.1,
    });
    const startRemote = () => serve(['--data', remoteDir, '--port', String(remotePort)]);
    const startLocal = () => serve(['--data', localDir, '--port', '0', '--shovel', `up=${shovel}`]);
    let remote = await startRemote();
    let local = await startLocal();
    const confirmed = new Set<string>();
    let interruptions = 0;

    for (let round = 0; round < ROUNDS; round++) {
      const connection = await amqplib.connect(local.url);
      connection.on('error', () => {});
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue('outbox', { durable: true });
      const ids = Array.from({ length: BATCH }, (_, i) => `${round}-${i}`);
      for (const id of ids) channel.sendToQueue('outbox', Buffer.from(id), { persistent: true });
      await channel.waitForConfirms();
      for (const id of ids) confirmed.add(id);
      await connection.close();
      if (round % 2 === 0) {
        // The remote goes away while the shovel is moving the batch, and comes back.
        await kill(remote.child);
        interruptions++;
        remote = await startRemote();
      }
      if (round % 3 !== 2) {
        // The local process dies mid-shovel, and starts again on its directory.
        await kill(local.child);
        interruptions++;
        local = await startLocal();
      }
    }

    const connection = await amqplib.connect(remote.url);
    const channel = await connection.createChannel();
    await channel.assertQueue('inbox', { durable: true });
    await poll(
      async () => (await channel.checkQueue('inbox')).messageCount,
      (n) => n >= confirmed.size,
      'every confirmed message at the remote',
    );
    const received: string[] = [];
    for (;;) {
      const message = await channel.get('inbox', { noAck: true });
      if (message === false) break;
      received.push(message.content.toString());
    }
    await connection.close();
    const missing = [...confirmed].filter((id) => !received.includes(id));
    expect(missing).toEqual([]);
    const duplicates = received.length - new Set(received).size;
    expect(duplicates).toBeLessThanOrEqual(interruptions * PREFETCH);
    expect({ confirmed: confirmed.size, duplicates, interruptions }).toMatchObject({
      confirmed: ROUNDS * BATCH,
    });
  }, 90_000);
});
