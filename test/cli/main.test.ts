import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';

describe('the mqlite binary', () => {
  it('prints its version', async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    const run = await runCli(['--version']);
    expect(run).toMatchObject({ code: 0, stdout: `${version}\n` });
  });

  it('lists its commands on --help and exits 0', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: mqlite <command>');
  });

  it('prints the usage on stderr and exits 2 without a command', async () => {
    const run = await runCli([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Usage: mqlite <command>');
  });

  it('names an unknown command and exits 2', async () => {
    const run = await runCli(['frobnicate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("unknown command 'frobnicate'");
  });

  it.each(['inspect', 'peek', 'verify', 'serve'])(
    'exits 2 with the usage for an option %s does not know',
    async (command) => {
      const run = await runCli([command, '--bogus', '/tmp']);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`mqlite ${command}: unknown option '--bogus'\n`);
      expect(run.stderr).toContain(`Usage: mqlite ${command}`);
    },
  );
});
