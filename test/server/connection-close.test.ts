/**
 * The end of a connection while the client still sends: the server answers close-ok and reads
 * what keeps arriving until the client closes, as RabbitMQ does, so the client finishes its
 * close without a reset. The server runs as `mqlite serve` in a process of its own (on memory
 * and on `--data`), as a client meets it: in the test's own process the client would never
 * write while the server closes. Run against the local RabbitMQ too.
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import amqpCallbacks from 'amqplib/callback_api';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempDir } from '../support/data-dirs.js';
import { type RunningServe, startServe } from '../support/serve.js';
import { onlyMqlite, rabbitUrl } from './served.js';

const servers: Record<string, RunningServe> = {};
beforeAll(async () => {
  servers.memory = await startServe(['--port', '0']);
  servers.data = await startServe(['--port', '0', '--data', tempDir()]);
});
afterAll(async () => {
  for (const server of Object.values(servers)) await server.stop('SIGKILL');
});

const targets = [
  { name: 'mqlite serve', url: () => servers.memory!.url },
  { name: 'mqlite serve --data', url: () => servers.data!.url },
  ...(onlyMqlite ? [] : [{ name: 'rabbitmq', url: () => rabbitUrl }]),
];

/** 64 KiB of heartbeat frames. */
const HEARTBEATS = Buffer.alloc(64 * 1024);
for (let at = 0; at < HEARTBEATS.length; at += 8) {
  HEARTBEATS.set([8, 0, 0, 0, 0, 0, 0, 0xce], at);
}

/** Settles with `promise`, or rejects after a generous deadline. */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 15_000);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * amqplib's callback API: publishes on a fresh exclusive queue until the channel's buffer is
 * full, then closes the connection at once. Resolves with 'closed' when the close callback fired
 * without an error, else with what went wrong.
 */
function publishBurstThenClose(url: string, body: Buffer, atLeast: number): Promise<string> {
  return new Promise<string>((resolve) => {
    amqpCallbacks.connect(url, (error, connection) => {
      if (error) return resolve(`connect: ${error.message}`);
      connection.on('error', (e: Error) => resolve(`error: ${e.message}`));
      connection.createChannel((error, channel) => {
        if (error) return resolve(`channel: ${error.message}`);
        channel.assertQueue('', { exclusive: true }, (error, ok) => {
          if (error) return resolve(`declare: ${error.message}`);
          let published = 0;
          while (channel.sendToQueue(ok.queue, body) || published < atLeast) published++;
          connection.close((error) => resolve(error ? `close: ${error.message}` : 'closed'));
        });
      });
    });
  });
}

describe.each(targets)('closing against $name', (target) => {
  test('close() completes while heartbeats the client writes after it still arrive', async () => {
    for (let run = 0; run < 3; run++) {
      const connection = await amqplib.connect(target.url());
      const stream = (connection.connection as unknown as { stream: NodeJS.WritableStream }).stream;
      const errors: string[] = [];
      connection.on('error', (error: Error) => errors.push(error.message));
      let done = false;
      const closed = connection.close().finally(() => {
        done = true;
      });
      // 2 MiB over several turns, so they keep arriving after the server answered the close.
      for (let sent = 0; sent < 32 && !done; sent++) {
        stream.write(HEARTBEATS);
        await new Promise((resolve) => setImmediate(resolve));
      }
      await within(closed, 'close-ok');
      expect(errors).toEqual([]);
    }
  });

  test.each([
    ['right after a burst of publishes up to the high watermark', 100, 0],
    ['while thousands of publishes are in flight', 1000, 3000],
  ])('a close %s calls back', async (_, size, atLeast) => {
    for (let run = 0; run < 5; run++) {
      const outcome = await within(
        publishBurstThenClose(target.url(), randomBytes(size), atLeast),
        'the close callback',
      );
      expect(outcome).toBe('closed');
    }
  });
});
