import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { progressBar } from '../../src/cli/progress.js';
import { verify } from '../../src/cli/verify.js';
import { copyFixture, removeDataDirs } from '../support/data-dirs.js';

afterAll(removeDataDirs);

function terminal(
  interactive: boolean,
  signal = new AbortController().signal,
): { io: CliIo; drawn: () => string } {
  const stderr = new PassThrough();
  let text = '';
  stderr.setEncoding('utf8').on('data', (chunk: string) => {
    text += chunk;
  });
  const io: CliIo = {
    stdout: new PassThrough(),
    stderr,
    env: {},
    interactive,
    signal,
  };
  return { io, drawn: () => text };
}

describe('the progress bar', () => {
  it('shows bytes checked, the total and the rate, and clears itself at the end', async () => {
    const { io, drawn } = terminal(true);
    let now = 0;
    const bar = progressBar(io, () => now);
    now = 1000;
    bar.update(1024 * 1024, 4 * 1024 * 1024);
    bar.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(drawn()).toBe(
      `\r[########----------------------] 1.0 MiB / 4.0 MiB  1.0 MiB/s\x1b[K\r\x1b[K`,
    );
  });

  it('redraws at most ten times a second, and always at the end', async () => {
    const { io, drawn } = terminal(true);
    let now = 0;
    const bar = progressBar(io, () => now);
    for (let done = 1; done < 100; done++) {
      now = done * 10; // 99 updates over ~1 s
      bar.update(done, 100);
    }
    bar.update(100, 100);
    await new Promise((resolve) => setImmediate(resolve));
    const draws = drawn().split('\r').length - 1;
    expect(draws).toBeGreaterThanOrEqual(10);
    expect(draws).toBeLessThanOrEqual(11);
    expect(drawn()).toContain('100 B / 100 B');
  });

  it('is drawn by mqlite verify on a terminal', async () => {
    const { io, drawn } = terminal(true);
    const code = await verify.run([copyFixture(3)], io);
    await new Promise((resolve) => setImmediate(resolve));
    expect(code).toBe(1);
    expect(drawn()).toMatch(/^\r\[[#-]{30}\] 0 B \/ 2\.6 KiB {2}/);
    expect(drawn()).toMatch(/\r\[#{30}\] 2\.6 KiB \/ 2\.6 KiB {2}/);
    expect(drawn().endsWith('\r\x1b[K')).toBe(true);
  });

  it('is cleared when mqlite verify is stopped by a signal', async () => {
    const stop = new AbortController();
    stop.abort('SIGINT');
    const { io, drawn } = terminal(true, stop.signal);
    const code = await verify.run([copyFixture(3)], io);
    await new Promise((resolve) => setImmediate(resolve));
    expect(code).toBe(1);
    expect(drawn()).toContain(
      '\r\x1b[Kmqlite verify: stopped before the end (nothing was changed)\n',
    );
  });

  it('draws nothing when stderr is not a terminal', async () => {
    const { io, drawn } = terminal(false);
    const bar = progressBar(io, () => 0);
    bar.update(1, 2);
    bar.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(drawn()).toBe('');
  });
});
