/**
 * Several processes sharing one durable directory through `mqlite serve`: the server owns the
 * directory, two worker processes consume with amqplib, this process publishes with confirms.
 * The server restarts in the middle; the workers reconnect and nothing confirmed is lost.
 *
 * In an application the server is `npx mqlite serve --data ./data --port 5672`; here this process
 * starts the package's binary itself, on a free port, in a directory of its own.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';

const self = fileURLToPath(import.meta.url);

if (process.argv[2] === 'worker') await work(process.argv[3]!);
else await main();

/** A worker: reports each job it processed to its parent, reconnecting when the server goes. */
async function work(url: string): Promise<void> {
  for (;;) {
    const connection = await amqplib.connect(url).catch(() => undefined);
    if (!connection) {
      await new Promise((resolve) => setTimeout(resolve, 50)); // the server is restarting
      continue;
    }
    connection.on('error', () => {});
    const gone = once(connection, 'close');
    const channel = await connection.createChannel();
    await channel.assertQueue('jobs', { durable: true });
    await channel.prefetch(1);
    await channel.consume('jobs', (message) => {
      if (!message) return;
      process.send!({ job: message.content.toString() });
      channel.ack(message);
    });
    process.send!({ ready: true });
    await gone;
  }
}

/** Starts `mqlite serve` and resolves with it and the URL it printed. */
async function startServer(dir: string, port: number) {
  // The `mqlite` binary of the installed package, as `npx mqlite` finds it.
  const manifest = createRequire(import.meta.url).resolve('mqlite/package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: { mqlite: string } };
  const server = spawn(
    process.execPath,
    [path.join(path.dirname(manifest), bin.mqlite), 'serve', '--data', dir, '--port', String(port)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(server.stdout.setEncoding('utf8'), 'data')) as [string];
  return { server, url: line.split('\n')[0]! };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'mqlite-example-'));
  let { server, url } = await startServer(dir, 0);
  const port = Number(new URL(url).port);
  console.log('serve prints its URL:', url.replace(/\d+$/, '<port>'));

  const processed = new Set<string>();
  const byWorker = new Map<ChildProcess, number>();
  let ready = 0;
  const workers = [1, 2].map(() => {
    const worker = fork(self, ['worker', url]);
    worker.on('message', (m: { job?: string; ready?: boolean }) => {
      if (m.ready) ready++;
      if (m.job) {
        processed.add(m.job);
        byWorker.set(worker, (byWorker.get(worker) ?? 0) + 1);
      }
    });
    return worker;
  });
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
  };

  const publish = async (from: number, to: number) => {
    const connection = await amqplib.connect(url);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('jobs', { durable: true });
    for (let i = from; i <= to; i++) {
      channel.sendToQueue('jobs', Buffer.from(`job ${i}`), { persistent: true });
    }
    await channel.waitForConfirms();
    await connection.close();
    console.log(`published jobs ${from}-${to}, each confirmed once stored`);
  };

  await until(() => ready === 2);
  await publish(1, 10);
  await until(() => processed.size === 10);
  console.log('processed:', processed.size, 'by', byWorker.size, 'workers');

  server.kill('SIGTERM');
  const [code] = await once(server, 'exit');
  console.log('serve stopped on SIGTERM, exit code', code);
  ({ server } = await startServer(dir, port));
  await until(() => ready >= 4);
  console.log('serve started again on the same directory; both workers reconnected');

  await publish(11, 20);
  await until(() => processed.size === 20);
  console.log('processed:', processed.size, 'by', byWorker.size, 'workers');

  for (const worker of workers) worker.kill();
  server.kill('SIGTERM');
  await once(server, 'exit');
  rmSync(dir, { recursive: true, force: true });
}
