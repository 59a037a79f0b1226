/**
 * `npm run bench`: runs every benchmark module in bench/ one after the other, each module (or each
 * section of a module that exports `sections`) in a process of its own, and prints one table per
 * module, then the rows of BENCHMARKS.md's lead table (figures with a target). With `--write`, it
 * also writes both into BENCHMARKS.md: the lead table's rows (keeping its Wire server rows) and
 * the section of all figures, with the command and the machine.
 *
 * `npm run bench -- stream lvq` runs only the named modules. `npm run bench -- --smoke` runs every
 * module once at a tiny size (CI does, so a broken module fails it); its figures mean nothing.
 */
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { formatRate, printResults, TARGET_TABLE_HEAD, targetRows } from './harness.js';
import type { BenchResult } from './types.js';

const here = new URL('.', import.meta.url);

interface BenchModule {
  run?: () => Promise<BenchResult[]>;
  /** Parts of the module that each get a process of their own (see `runIsolated`). */
  sections?: Record<string, () => Promise<BenchResult[]>>;
}

function importModule(name: string): Promise<BenchModule> {
  return import(new URL(`${name}.ts`, here).href) as Promise<BenchModule>;
}

async function runModule(name: string, section: string | undefined): Promise<BenchResult[]> {
  const module = await importModule(name);
  const run = section === undefined ? module.run : module.sections?.[section];
  if (!run) throw new Error(`bench/${name}.ts exports no ${section ?? 'run()'}`);
  return run();
}

/**
 * Runs a module, or one section of it, in a child process with this one's flags. In one shared
 * process, code that earlier benchmarks warmed up with other shapes (other codecs, other storages)
 * is optimized for those too, which moved later figures by up to 2×: a stream on fs published
 * at 1.8 M/s after the memory sections and 2.5 M/s alone.
 */
function runIsolated(name: string, section?: string): Promise<BenchResult[]> {
  return new Promise((resolve, reject) => {
    const args = ['--module', name, ...(section === undefined ? [] : ['--section', section])];
    const child = fork(fileURLToPath(import.meta.url), args);
    let results: BenchResult[] | undefined;
    child.on('message', (message) => {
      results = message as BenchResult[];
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const what = section === undefined ? '' : ` section ${section}`;
      if (code === 0 && results) resolve(results);
      else reject(new Error(`bench/${name}.ts${what} failed (exit code ${code})`));
    });
  });
}

/** A module's results: one process per section when it has sections, else one for the module. */
async function runEach(name: string): Promise<BenchResult[]> {
  const sections = Object.keys((await importModule(name)).sections ?? {});
  if (sections.length === 0) return runIsolated(name);
  const results: BenchResult[] = [];
  for (const section of sections) results.push(...(await runIsolated(name, section)));
  return results;
}

const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const childModule = flag('--module');
if (childModule !== undefined) {
  const results = await runModule(childModule, flag('--section'));
  process.send!(results);
  process.disconnect();
  process.exit(0);
}
// The helpers the modules share, which measure nothing themselves.
const skip = new Set(['index.ts', 'types.ts', 'harness.ts', 'sqlite.ts']);
const args = process.argv.slice(2);
const write = args.includes('--write');
// The children read it (see harness.ts): set before the first fork.
if (args.includes('--smoke')) {
  if (write) throw new Error('--smoke figures mean nothing: not written with --write');
  process.env.BENCH_SMOKE = '1';
}
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

const tables: string[] = [];
const leadRows: string[] = [];
for (const name of modules) {
  console.log(`## ${name}`);
  const results = await runEach(name);
  printResults(results);
  leadRows.push(...targetRows(results));
  tables.push(
    [
      `### ${name}`,
      '',
      '| benchmark | ops/s | note |',
      '| --- | ---: | --- |',
      ...results.map((r) => `| ${r.name} | ${formatRate(r.opsPerSec)} | ${r.note ?? ''} |`),
    ].join('\n'),
  );
}

console.log(['## BENCHMARKS.md lead table', '', ...TARGET_TABLE_HEAD, ...leadRows, ''].join('\n'));

/**
 * `text` with what lies between the markers of a generated section replaced:
 * `<!-- bench:start -->`/`<!-- bench:end -->`, or `<!-- bench:<section>:start -->`/`...:end -->`.
 */
function replaceBetween(
  text: string,
  section: string | undefined,
  make: (old: string) => string,
): string {
  const tag = section === undefined ? 'bench:' : `bench:${section}:`;
  const start = `<!-- ${tag}start -->`;
  const end = `<!-- ${tag}end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`BENCHMARKS.md has no ${start} ... ${end} markers`);
  const old = text.slice(from + start.length, to);
  return `${text.slice(0, from)}${start}\n\n${make(old)}\n\n${end}${text.slice(to + end.length)}`;
}

if (write) {
  const file = new URL('../BENCHMARKS.md', here);
  let text = readFileSync(file, 'utf8');
  // The wire server's rows come from its own benchmark: kept as they are.
  const wire = '| **Wire server**';
  text = replaceBetween(text, 'targets', (old) => {
    const kept = old.includes(wire) ? old.slice(old.indexOf(wire)).trim() : `${wire} | | | | |`;
    return [...TARGET_TABLE_HEAD, ...leadRows, kept].join('\n');
  });
  text = replaceBetween(text, undefined, () =>
    [
      `Command: \`npm run bench -- --write\` on ${new Date().toISOString().slice(0, 10)}.`,
      `Machine: ${machine}.`,
      '',
      tables.join('\n\n'),
    ].join('\n'),
  );
  writeFileSync(file, text);
  console.log('BENCHMARKS.md updated');
}
