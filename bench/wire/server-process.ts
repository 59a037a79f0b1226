/**
 * A server of the wire benchmarks in a process of its own (serve.ts), and the resident memory of
 * any process, so the server's memory is measured apart from the client's.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { ServerKind, Usage } from './serve.js';

/** A server of this benchmark in a child process, and its URL. */
export interface Child {
  readonly url: string;
  readonly pid: number;
  usage(): Promise<Usage>;
  stop(): Promise<void>;
}

export function spawnServer(kind: ServerKind): Promise<Child> {
  const child: ChildProcess = fork(fileURLToPath(new URL('serve.ts', import.meta.url)), [kind], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
  });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      child.once('message', (m) => resolve(m as T));
      child.once('exit', (code) =>
        reject(new Error(`bench/wire/serve.ts ${kind} exited (${code})`)),
      );
    });
  return next<{ port: number }>().then(({ port }) => ({
    url: `amqp://guest:guest@127.0.0.1:${port}`,
    pid: child.pid!,
    usage: () => {
      const answer = next<Usage>();
      child.send('usage');
      return answer;
    },
    stop: () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send('exit');
      return exited;
    },
  }));
}

/** Resident memory of a process, from /proc. */
export async function rssOf(pid: string): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}
