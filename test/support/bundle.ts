/**
 * A TypeScript entry point bundled into one ESM file that plain `node` runs. Tests that start
 * child processes start them from the bundle: through a TypeScript loader each start costs
 * seconds on a loaded machine, most of a crash test's time. Built once per process and entry;
 * removed when the process exits.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const bundles = new Map<string, Promise<string>>();
let dir: string | undefined;

/** The path of `entry` bundled (an absolute path or a file URL), to run as `node <path> ...`. */
export function bundled(entry: string | URL): Promise<string> {
  const source = typeof entry === 'string' ? entry : fileURLToPath(entry);
  let out = bundles.get(source);
  if (!out) {
    out = bundle(source);
    bundles.set(source, out);
  }
  return out;
}

async function bundle(source: string): Promise<string> {
  if (dir === undefined) {
    const made = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-test-bundle-'));
    process.once('exit', () => fs.rmSync(made, { recursive: true, force: true }));
    dir = made;
  }
  const outfile = path.join(dir, `${bundles.size}-${path.basename(source, '.ts')}.mjs`);
  await build({
    entryPoints: [source],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'error',
    // Bundled dependencies written as CommonJS need a require of their own.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  return outfile;
}
