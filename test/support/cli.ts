/**
 * Runs the `mqlite` binary as a child process, as a user's shell would. The binary is bundled
 * once per test process (esbuild), beside a copy of package.json, so each run starts in tens of
 * milliseconds instead of compiling TypeScript.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));
let bundled: Promise<string> | undefined;

/** The path of the bundled binary (built on first use). */
export function cliBinary(): Promise<string> {
  bundled ??= (async () => {
    const dir = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-cli-'));
    // Two levels below package.json, as dist/cli/bin.js is.
    const out = path.join(dir, 'dist', 'cli', 'bin.mjs');
    fs.copyFileSync(path.join(root, 'package.json'), path.join(dir, 'package.json'));
    await build({
      entryPoints: [path.join(root, 'src/cli/bin.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: out,
      logLevel: 'error',
      // Bundled dependencies written as CommonJS need a require of their own.
      banner: {
        js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
      },
    });
    return out;
  })();
  return bundled;
}

export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Written to the command's stdin, which is then closed. */
  readonly input?: string;
}

/** Starts `mqlite ...args` and hands back the process (for commands that keep running). */
export async function startCli(
  args: readonly string[],
  options: CliOptions = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [await cliBinary(), ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: 'pipe',
  });
  child.stdin?.end(options.input);
  return child;
}

/** Runs `mqlite ...args` to its end and resolves with its exit code and output. */
export async function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  const child = await startCli(args, options);
  return finished(child);
}

/** Resolves once `child` exits, with everything it wrote. */
export function finished(child: ChildProcess): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
