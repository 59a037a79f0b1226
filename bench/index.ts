/**
 * `npm run bench`: runs every benchmark module in bench/ one after the other, each in a process of
 * its own, and prints one table per module. With `--write`, it also replaces the generated section
 * of BENCHMARKS.md with these figures, the command and the machine.
 *
 * `npm run bench -- stream lvq` runs only the named modules.
 */
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { formatRate, printResults } from './harness.js';
import type { BenchResult } from './types.js';

const here = new URL('.', import.meta.url);

async function runModule(name: string): Promise<BenchResult[]> {
  const module = (await import(new URL(`${name}.ts`, here).href)) as {
    run?: () => Promise<BenchResult[]>;
  };
  if (!module.run) throw new Error(`bench/${name}.ts exports no run()`);
  return module.run();
}

/**
 * Runs a module in a child process with this one's flags. In one shared process, the code paths
 * earlier modules warmed up with other shapes (other codecs, other storages) are optimized for
 * those too, which moved later modules' figures by up to 2×.
 */
function runIsolated(name: string): Promise<BenchResult[]> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), ['--module', name]);
    let results: BenchResult[] | undefined;
    child.on('message', (message) => {
      results = message as BenchResult[];
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0 && results) resolve(results);
      else reject(new Error(`bench/${name}.ts failed (exit code ${code})`));
    });
  });
}

const childOf = process.argv.indexOf('--module');
if (childOf >= 0) {
  const results = await runModule(process.argv[childOf + 1]!);
  process.send!(results);
  process.disconnect();
  process.exit(0);
}
const skip = new Set(['index.ts', 'types.ts', 'harness.ts']);
const args = process.argv.slice(2);
const write = args.includes('--write');
const only = args.filter((a) => !a.startsWith('--'));
const modules = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !skip.has(f))
  .map((f) => f.slice(0, -3))
  .filter((name) => only.length === 0 || only.includes(name))
  .sort();

const machine = `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, ${Math.round(
  os.totalmem() / 2 ** 30,
)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`;
console.log(`machine: ${machine}\n`);

const sections: string[] = [];
for (const name of modules) {
  console.log(`## ${name}`);
  const results = await runIsolated(name);
  printResults(results);
  sections.push(
    [
      `### ${name}`,
      '',
      '| benchmark | ops/s | note |',
      '| --- | ---: | --- |',
      ...results.map((r) => `| ${r.name} | ${formatRate(r.opsPerSec)} | ${r.note ?? ''} |`),
    ].join('\n'),
  );
}

if (write) {
  const file = new URL('../BENCHMARKS.md', here);
  const start = '<!-- bench:start -->';
  const end = '<!-- bench:end -->';
  const text = readFileSync(file, 'utf8');
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error('BENCHMARKS.md has no generated section markers');
  const generated = [
    start,
    '',
    `Command: \`npm run bench -- --write\` on ${new Date().toISOString().slice(0, 10)}.`,
    `Machine: ${machine}.`,
    '',
    ...sections.flatMap((s) => [s, '']),
    end,
  ].join('\n');
  writeFileSync(file, text.slice(0, from) + generated + text.slice(to + end.length));
  console.log('BENCHMARKS.md updated');
}
