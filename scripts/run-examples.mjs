// Runs every file in examples/ in its own process and fails if any of them fails or prints
// other than its expected output, `examples/output/<name>.txt`: an example is a check of what it
// shows, not only of running, and it imports mqlite by name, as an app does. `--update` writes
// the expected output of every example afresh.
// AMQP_URL is not passed on: the migration example then runs on mqlite alone, as it prints here.
// A directory of examples/ with a vitest.config.ts is a test suite as a user writes one: it is run
// with Vitest and passes when its tests do (its report, with timings, is not compared). One with a
// jest.config.js is a CommonJS project run with Jest, `mqlite` mapped to the CommonJS build
// (built first when dist/ lacks it).
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const examples = new URL('../examples/', import.meta.url);
const outputs = new URL('output/', examples);
const update = process.argv.includes('--update');

/** The first line where `actual` and `expected` differ, for the failure message. */
function firstDifference(actual, expected) {
  const a = actual.split('\n');
  const e = expected.split('\n');
  for (let i = 0; i < Math.max(a.length, e.length); i++) {
    if (a[i] !== e[i])
      return `line ${i + 1}:\n  expected: ${e[i] ?? '(end)'}\n  printed:  ${a[i] ?? '(end)'}`;
  }
  return '';
}

const files = readdirSync(examples)
  .filter((f) => f.endsWith('.ts'))
  .sort();
let failed = 0;
for (const file of files) {
  process.stdout.write(`\n--- examples/${file}\n`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `examples/${file}`], {
    stdio: ['inherit', 'pipe', 'inherit'],
    env: { ...process.env, AMQP_URL: undefined },
    encoding: 'utf8',
    timeout: 60_000,
  });
  process.stdout.write(run.stdout ?? '');
  const expectedFile = new URL(file.replace(/\.ts$/, '.txt'), outputs);
  let problem = run.status === 0 ? '' : `exit ${run.status ?? run.signal}`;
  // An example is what a user copies: it reaches mqlite by the package's name, as an app does.
  const source = readFileSync(new URL(file, examples), 'utf8');
  if (!problem && /['"]\.\.\/src\//.test(source))
    problem = 'reaches into ../src/ (import mqlite instead)';
  if (!problem && update) {
    mkdirSync(outputs, { recursive: true });
    writeFileSync(expectedFile, run.stdout);
  } else if (!problem) {
    let expected;
    try {
      expected = readFileSync(expectedFile, 'utf8');
    } catch {
      problem = `no expected output in examples/output/ (npm run examples -- --update writes it)`;
    }
    if (expected !== undefined && expected !== run.stdout) {
      problem = `printed other than expected, ${firstDifference(run.stdout, expected)}`;
    }
  }
  if (problem) {
    failed++;
    process.stdout.write(`examples/${file} failed: ${problem}\n`);
  }
}
const suites = readdirSync(examples, { withFileTypes: true })
  .filter(
    (entry) =>
      entry.isDirectory() && existsSync(new URL(`${entry.name}/vitest.config.ts`, examples)),
  )
  .map((entry) => entry.name)
  .sort();
for (const suite of suites) {
  process.stdout.write(`\n--- examples/${suite}/ (vitest)\n`);
  const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
  const config = fileURLToPath(new URL('example-vitest.config.ts', import.meta.url));
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', vitest, 'run', '--root', `examples/${suite}`, '--config', config],
    {
      stdio: 'inherit',
      env: { ...process.env, AMQP_URL: undefined, EXAMPLE_DIR: `examples/${suite}` },
      timeout: 120_000,
    },
  );
  if (run.status !== 0) {
    failed++;
    process.stdout.write(`examples/${suite}/ failed: exit ${run.status ?? run.signal}\n`);
  }
}
const jestSuites = readdirSync(examples, { withFileTypes: true })
  .filter(
    (entry) => entry.isDirectory() && existsSync(new URL(`${entry.name}/jest.config.js`, examples)),
  )
  .map((entry) => entry.name)
  .sort();
const cjs = new URL('../dist/cjs/', import.meta.url);
if (jestSuites.length > 0 && !existsSync(new URL('mqlite.js', cjs))) {
  process.stdout.write('\n--- building dist/ for the Jest examples (npm run build)\n');
  const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(1);
}
for (const suite of jestSuites) {
  process.stdout.write(`\n--- examples/${suite}/ (jest)\n`);
  const rootDir = fileURLToPath(new URL(`${suite}/`, examples));
  // `mqlite` found as `npm install mqlite` puts it, by the package's exports: the global setup
  // through Node's NODE_PATH, the test files through Jest's modulePaths.
  const modules = mkdtempSync(join(tmpdir(), 'mqlite-example-'));
  symlinkSync(fileURLToPath(new URL('..', import.meta.url)), join(modules, 'mqlite'), 'dir');
  const config = {
    ...createRequire(import.meta.url)(`${rootDir}jest.config.js`),
    rootDir,
    modulePaths: [modules],
  };
  const jest = fileURLToPath(new URL('../node_modules/jest/bin/jest.js', import.meta.url));
  const run = spawnSync(process.execPath, [jest, '--config', JSON.stringify(config)], {
    stdio: 'inherit',
    env: { ...process.env, AMQP_URL: undefined, NODE_PATH: modules },
    timeout: 120_000,
  });
  rmSync(modules, { recursive: true, force: true });
  if (run.status !== 0) {
    failed++;
    process.stdout.write(`examples/${suite}/ failed: exit ${run.status ?? run.signal}\n`);
  }
}
const total = files.length + suites.length + jestSuites.length;
process.stdout.write(`\nexamples: ${total - failed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
