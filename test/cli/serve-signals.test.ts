import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exitsWithParent } from '../../src/cli/serve/parent-watch.js';
import { cliBinary } from '../support/cli.js';
import { tempDir } from '../support/data-dirs.js';
import { DEADLINE_MS, serveEach, until } from '../support/serve.js';

const serve = serveEach();
const orphans: number[] = [];
afterEach(() => {
  // A server the check failed to stop: not left running.
  for (const pid of orphans.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
});

describe('mqlite serve and signals', () => {
  it('exits 0 when one Ctrl-C arrives twice, from the terminal and from npx', async () => {
    const server = await serve(['--port', '0']);
    server.child.kill('SIGINT');
    server.child.kill('SIGINT');
    const run = await server.exited;
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
  });

  it(
    'stops and frees its directory when the process that started it is killed',
    async () => {
      const data = tempDir();
      // A launcher as npx is: it starts serve with npm's environment and passes no signal on.
      const launcher = spawn(
        process.execPath,
        [
          '-e',
          `const { spawn } = require('node:child_process');
         const child = spawn(process.execPath, process.argv.slice(1), { stdio: 'inherit' });
         process.stderr.write('pid ' + child.pid + '\\n');`,
          await cliBinary(),
          'serve',
          '--data',
          data,
          '--port',
          '0',
        ],
        { env: { ...process.env, npm_command: 'exec' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      launcher.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
      });
      launcher.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
      });
      // Both processes write to these pipes: they close when the last of the two has exited.
      let closed = false;
      launcher.stdout.once('close', () => {
        closed = true;
      });
      await until(() => stdout.includes('\n') && /pid \d+/.test(stderr), 'the URL line');
      orphans.push(Number(/pid (\d+)/.exec(stderr)![1]));
      launcher.kill('SIGKILL');
      await until(() => closed, 'serve to stop after its parent');
      // The directory's lock was let go: another serve opens it.
      const again = await serve(['--data', data, '--port', '0']);
      expect((await again.stop()).code).toBe(0);
    },
    2 * DEADLINE_MS,
  );

  it.each(['SIGTERM', 'SIGKILL'] as const)(
    'under a real npx, a %s to npx alone stops serve and frees its directory',
    async (signal) => {
      // A project with mqlite's binary installed, as `npm install mqlite` leaves it.
      const project = tempDir();
      const bin = path.join(project, 'node_modules', '.bin');
      fs.mkdirSync(bin, { recursive: true });
      fs.writeFileSync(path.join(project, 'package.json'), '{ "private": true }\n');
      const cli = await cliBinary();
      fs.chmodSync(cli, 0o755);
      fs.symlinkSync(cli, path.join(bin, 'mqlite'));
      const data = path.join(project, 'data');
      const npx = spawn('npx', ['--offline', 'mqlite', 'serve', '--data', data, '--port', '0'], {
        cwd: project,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      npx.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
      });
      // npx, its shell and serve write to this pipe: it closes when the last has exited.
      let closed = false;
      npx.stdout.once('close', () => {
        closed = true;
      });
      await until(() => stdout.includes('\n'), 'the URL line');
      npx.kill(signal);
      await until(() => closed, 'serve to stop after npx');
      const again = await serve(['--data', data, '--port', '0']);
      expect((await again.stop()).code).toBe(0);
    },
    2 * DEADLINE_MS,
  );

  it('exits with its parent when npm started it, or when told to', () => {
    const none = { exitWithParent: false, noExitWithParent: false };
    expect(exitsWithParent(none, { npm_command: 'exec' })).toBe(true);
    expect(exitsWithParent(none, {})).toBe(false);
    expect(exitsWithParent({ ...none, exitWithParent: true }, {})).toBe(true);
    expect(exitsWithParent({ ...none, noExitWithParent: true }, { npm_command: 'exec' })).toBe(
      false,
    );
  });
});
