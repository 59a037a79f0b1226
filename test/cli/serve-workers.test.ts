import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { type RunningServe, startServe, until } from '../support/serve.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const children: ChildProcess[] = [];
let server: RunningServe | undefined;
let dir: string | undefined;

afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await server?.stop('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A client process of test/support/serve-clients, and the lines it has written. */
function client(script: string, args: readonly string[]): { child: ChildProcess; lines: string[] } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'test/support/serve-clients', script), ...args],
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  children.push(child);
  const lines: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  return { child, lines };
}

const readyCount = (lines: readonly string[]) => lines.filter((l) => l === 'ready').length;

it('two worker processes and a producer share one data directory through serve, restarted in the middle, and no confirmed message is lost', async () => {
  const N = 400;
  dir = mkdtempSync(path.join(tmpdir(), 'mqlite-serve-workers-'));
  const data = path.join(dir, 'data');
  server = await startServe(['--data', data, '--port', '0']);
  const { port, url } = server;
  const workers = [client('worker.ts', [url, 'jobs']), client('worker.ts', [url, 'jobs'])];
  await until(() => workers.every((w) => readyCount(w.lines) === 1), 'both workers consuming');
  const producer = client('producer.ts', [url, 'jobs', String(N)]);
  const producerExit = new Promise<number | null>((resolve) =>
    producer.child.once('exit', (code) => resolve(code)),
  );
  const seen = () => new Set(workers.flatMap((w) => w.lines.filter((l) => l !== 'ready')));

  // Half published and confirmed, part of it processed: restart the server.
  await until(() => producer.lines.length >= N / 2 && seen().size > 0, 'the first half');
  expect((await server.stop('SIGTERM')).code).toBe(0);
  server = await startServe(['--data', data, '--port', String(port)]);
  await until(() => workers.every((w) => readyCount(w.lines) >= 2), 'both workers back');
  producer.child.stdin!.write('go\n');

  expect(await producerExit).toBe(0);
  const confirmed = new Set(producer.lines);
  expect(confirmed.size).toBe(N);
  await until(
    () => [...confirmed].every((id) => seen().has(id)),
    'every confirmed message processed',
  );
  // Both workers had a share of the work.
  for (const worker of workers)
    expect(worker.lines.filter((l) => l !== 'ready').length).toBeGreaterThan(0);
  expect((await server.stop('SIGTERM')).code).toBe(0);
});
