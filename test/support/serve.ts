/**
 * `mqlite serve` as a child process: started, its URL line read, stopped by a signal.
 */
import type { ChildProcess } from 'node:child_process';
import { afterEach } from 'vitest';
import { type CliRun, finished, startCli } from './cli.js';
import { removeDataDirs } from './data-dirs.js';

/** How long a process has to do what a test waits for: generous, for a loaded machine. */
export const DEADLINE_MS = 30_000;

/** Polls `check` until it returns true (or a value), failing after {@link DEADLINE_MS}. */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + DEADLINE_MS;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface RunningServe {
  readonly child: ChildProcess;
  /** The first line: the amqp:// URL. */
  readonly url: string;
  readonly port: number;
  /** Everything written so far. */
  readonly output: { stdout: string; stderr: string };
  /** Resolves with the run once the process exited. */
  readonly exited: Promise<CliRun>;
  /** Sends `signal` (SIGTERM by default) and resolves with the run. */
  stop(signal?: NodeJS.Signals): Promise<CliRun>;
}

/** Starts `mqlite serve ...args` and waits for the URL line(s) it prints once listening. */
export async function startServe(args: readonly string[], urlLines = 1): Promise<RunningServe> {
  const child = await startCli(['serve', ...args]);
  const exited = finished(child);
  const output = { stdout: '', stderr: '' };
  child.stdout?.on('data', (chunk: string) => {
    output.stdout += chunk;
  });
  child.stderr?.on('data', (chunk: string) => {
    output.stderr += chunk;
  });
  let done: CliRun | undefined;
  void exited.then((run) => {
    done = run;
  });
  await until(() => {
    if (done) throw new Error(`serve exited early (${done.code}): ${done.stderr}`);
    return output.stdout.split('\n').length > urlLines;
  }, 'the URL line');
  const url = output.stdout.split('\n')[0]!;
  return {
    child,
    url,
    port: Number(new URL(url).port),
    output,
    exited,
    stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (done === undefined) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Starts `mqlite serve <defaults> ...args` for the tests of a file. After each test, every server
 * it started is killed, then the directories `tempDir()` made are removed (in that order, so no
 * server writes into a directory being removed).
 */
export function serveEach(
  defaults: readonly string[] = [],
): (args: readonly string[]) => Promise<RunningServe> {
  const running: RunningServe[] = [];
  afterEach(async () => {
    for (const server of running.splice(0)) await server.stop('SIGKILL');
    removeDataDirs();
  });
  return async (args) => {
    const server = await startServe([...defaults, ...args]);
    running.push(server);
    return server;
  };
}

/** The body of what amqplib's `channel.get` returned, as text (undefined for an empty queue). */
export function bodyText(got: { content: Buffer } | false): string | undefined {
  return got === false ? undefined : got.content.toString();
}
