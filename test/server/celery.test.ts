/**
 * A Celery application on quorum queues runs unchanged against the server: its task queue is
 * declared `x-queue-type: quorum` (test/server/languages/celery_quorum.py), a task sent to it is
 * run by a worker (`--pool solo`), and a worker that asks a channel-global prefetch is refused on
 * consume, as RabbitMQ refuses it on a quorum queue. The same on the local RabbitMQ (unless
 * `PARITY_TARGETS=mqlite`).
 *
 * Skipped, with the reason in the name of its tests, when no `python3` imports celery (Debian
 * `python3-celery`; or the interpreter `PYTHON` names).
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import amqplib from 'amqplib';
import { afterAll, describe, expect, test } from 'vitest';
import { servedBroker, wireTargets } from './served.js';

const run = promisify(execFile);
const languages = path.join(path.dirname(fileURLToPath(import.meta.url)), 'languages');
/** A limit for a hang: a worker starts in about a second, much longer on a loaded machine. */
const WORKER_DEADLINE_MS = 120_000;
const TEST_TIMEOUT = { timeout: 300_000 };

/** The first interpreter that imports celery, or why there is none. */
function findCelery(): { python?: string; missing?: string } {
  const candidates = process.env.PYTHON ? [process.env.PYTHON] : ['python3', '/usr/bin/python3'];
  for (const python of candidates) {
    if (spawnSync(python, ['-c', 'import celery'], { stdio: 'ignore' }).status === 0) {
      return { python };
    }
  }
  return {
    missing: `no ${candidates.join(' or ')} imports celery (apt-get install python3-celery)`,
  };
}

const { python, missing } = findCelery();
if (missing) console.warn(`celery: skipped, ${missing}`);

const served = servedBroker();
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'mqlite-celery-'));
/** What the tests declared on each broker (queue and exchange of the same name), deleted after. */
const declared: { url: () => string; name: string }[] = [];

afterAll(async () => {
  fs.rmSync(scratch, { recursive: true, force: true });
  for (const { url, name } of declared) {
    const connection = await amqplib.connect(url());
    const channel = await connection.createChannel();
    await channel.deleteQueue(name);
    await channel.deleteExchange(name);
    await connection.close();
  }
});

type Qos = 'consumer' | 'global';

function environment(url: string, queue: string, qos: Qos): NodeJS.ProcessEnv {
  return { ...process.env, AMQP_URL: url, QUEUE: queue, CELERY_QOS: qos, PYTHONPATH: languages };
}

/** Sends the task `record(file, text)` from a Celery client process (declaring the queue). */
async function sendTask(url: string, queue: string, file: string, text: string): Promise<void> {
  await run(python!, [path.join(languages, 'celery_quorum.py'), file, text], {
    env: environment(url, queue, 'consumer'),
    timeout: WORKER_DEADLINE_MS,
  });
}

/**
 * Runs a Celery worker on `queue` until `done(log)` holds (polled, with a deadline), then stops
 * it (warm shutdown); returns its log.
 */
async function workUntil(
  url: string,
  queue: string,
  qos: Qos,
  done: (log: string) => boolean,
): Promise<string> {
  const args = ['-m', 'celery', '-A', 'celery_quorum', 'worker', '--pool', 'solo', '-Q', queue];
  const quiet = ['--without-heartbeat', '--without-gossip', '--without-mingle'];
  const worker: ChildProcess = spawn(python!, [...args, ...quiet, '--loglevel', 'INFO'], {
    env: environment(url, queue, qos),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  worker.stdout!.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  worker.stderr!.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  let exited = false;
  const closed = new Promise<void>((resolve) =>
    worker.on('close', () => {
      exited = true;
      resolve();
    }),
  );
  try {
    for (const end = Date.now() + WORKER_DEADLINE_MS; !done(log); ) {
      if (exited || Date.now() > end) {
        throw new Error(`celery worker ${exited ? 'exited' : 'timed out'}:\n${log.slice(-3000)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A warm shutdown (SIGTERM) sends what the worker owes the broker, its acks included.
    worker.kill('SIGTERM');
    for (const end = Date.now() + WORKER_DEADLINE_MS; !exited && Date.now() < end; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return log;
  } finally {
    if (!exited) worker.kill('SIGKILL');
    await closed;
  }
}

describe.each(wireTargets(served))('celery on quorum queues, $name', ({ url }) => {
  const title = (text: string) => (missing ? `${text} (skipped: ${missing})` : text);

  test.skipIf(!python)(
    title('a task sent to a quorum task queue is run by a worker with per-consumer prefetch'),
    TEST_TIMEOUT,
    async () => {
      const queue = `mqlite-celery-${randomBytes(4).toString('hex')}`;
      declared.push({ url, name: queue });
      const file = path.join(scratch, `${queue}.txt`);
      await sendTask(url(), queue, file, 'hello from celery');
      const read = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
      const log = await workUntil(url(), queue, 'consumer', (text) => text.includes('succeeded'));
      expect(read()).toBe('hello from celery\n');
      expect(log).toContain('celery_quorum.record');
      // The queue the application declared is a quorum queue, its consumer gone with the worker.
      const connection = await amqplib.connect(url());
      try {
        const channel = await connection.createChannel();
        // The 406 below closes the channel: it is awaited there, not an error of the test.
        channel.on('error', () => {});
        for (const end = Date.now() + WORKER_DEADLINE_MS; ; ) {
          if ((await channel.checkQueue(queue)).consumerCount === 0) break;
          if (Date.now() > end) throw new Error(`${queue} still has the worker's consumer`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        const refused = await channel
          .assertQueue(queue, { arguments: { 'x-queue-type': 'classic' } })
          .then(
            () => 'declared',
            (error: { code?: number }) => error.code,
          );
        expect(refused).toBe(406);
      } finally {
        await connection.close().catch(() => {});
      }
    },
  );

  test.skipIf(!python)(
    title('a worker asking a channel-global prefetch is refused on consume with 540'),
    TEST_TIMEOUT,
    async () => {
      const queue = `mqlite-celery-${randomBytes(4).toString('hex')}`;
      declared.push({ url, name: queue });
      const file = path.join(scratch, `${queue}.txt`);
      await sendTask(url(), queue, file, 'never run');
      const refusal = `(540) NOT_IMPLEMENTED - queue '${queue}' in vhost '/' does not support global qos`;
      const log = await workUntil(url(), queue, 'global', (text) => text.includes(refusal));
      expect(log).toContain(refusal);
      expect(fs.existsSync(file)).toBe(false);
    },
  );
});
