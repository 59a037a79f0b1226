// Packs the tarball as `npm publish` would and checks it as a user gets it: its file list, then,
// installed into a scratch project (from the tarball, its dependencies from the npm cache), an
// ES module, a CommonJS script and TypeScript projects (node16 and bundler resolution, and a
// CommonJS one) that import it, then publint and arethetypeswrong.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const run = (file, args, cwd) =>
  execFileSync(file, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

const scratch = mkdtempSync(path.join(tmpdir(), 'mqlite-package-'));
try {
  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', scratch], root));
  const tarball = path.join(scratch, packed.filename);
  const files = packed.files.map((f) => f.path);
  const stray = files.filter(
    (f) => !/^(dist\/.*\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/.test(f),
  );
  if (stray.length > 0)
    throw new Error(`the tarball holds more than dist, README, LICENSE: ${stray}`);
  for (const needed of ['dist/index.js', 'dist/index.d.ts', 'dist/testing/index.js', 'LICENSE'])
    if (!files.includes(needed)) throw new Error(`the tarball lacks ${needed}`);
  console.log(`${packed.filename}: ${files.length} files, ${packed.size} bytes`);

  const app = path.join(scratch, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "private": true }\n');
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], app);

  const use = `const broker = await Broker.open();
const q = await broker.queue('q');
await q.publish('hello');
const msg = await q.get({ noAck: true });
const clock = new ManualClock(0);
if (msg?.bodyString() !== 'hello' || clock.now() !== 0) throw new Error('unexpected result');
await broker.close();
console.log('ok');`;
  const files2 = {
    'esm.mjs': `import { Broker } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\n${use}\n`,
    'cjs.cjs': `const { Broker } = require('mqlite');\nconst { ManualClock } = require('mqlite/testing');\n(async () => {\n${use}\n})();\n`,
    'ts-node16/main.mts': `import { Broker, type Message } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\nconst typed: Message | undefined = undefined;\nvoid typed;\n${use}\n`,
    'ts-bundler/main.mts': `import { Broker, type Message } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\nconst typed: Message | undefined = undefined;\nvoid typed;\n${use}\n`,
    'ts-cjs/main.cts': `import { Broker } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\n(async () => {\n${use}\n})();\n`,
  };
  const tsconfigs = {
    'ts-node16': { module: 'node16', moduleResolution: 'node16' },
    'ts-bundler': { module: 'preserve', moduleResolution: 'bundler' },
    // CommonJS output that require()s the ES module: TypeScript models that from nodenext on.
    'ts-cjs': { module: 'nodenext', moduleResolution: 'nodenext' },
  };
  for (const [file, text] of Object.entries(files2)) {
    mkdirSync(path.dirname(path.join(app, file)), { recursive: true });
    writeFileSync(path.join(app, file), text);
  }
  for (const [dir, options] of Object.entries(tsconfigs)) {
    // A Node project's: @types/node (from this checkout) declares Buffer and AsyncDisposable.
    const typeRoots = [path.join(root, 'node_modules', '@types')];
    const compilerOptions = {
      ...options,
      target: 'es2022',
      strict: true,
      types: ['node'],
      typeRoots,
      outDir: 'out',
    };
    writeFileSync(path.join(app, dir, 'tsconfig.json'), JSON.stringify({ compilerOptions }));
    run(bin('tsc'), ['-p', path.join(app, dir)], app);
  }
  for (const file of [
    'esm.mjs',
    'cjs.cjs',
    'ts-node16/out/main.mjs',
    'ts-bundler/out/main.mjs',
    'ts-cjs/out/main.cjs',
  ]) {
    const printed = run(process.execPath, [file], app).trim();
    if (printed !== 'ok') throw new Error(`${file} printed ${printed}`);
    console.log(`${file}: ok`);
  }
  // The binary as npm links it into the consumer's node_modules/.bin.
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const printed = run(path.join(app, 'node_modules', '.bin', 'mqlite'), ['--version'], app).trim();
  if (printed !== version) throw new Error(`mqlite --version printed ${printed}, not ${version}`);
  console.log(`mqlite --version: ${printed}`);

  process.stdout.write(run(bin('publint'), ['run', '--strict', tarball], root));
  // require() of an ES module is how CommonJS loads mqlite (Node >= 20.19, the engines floor),
  // which arethetypeswrong still counts as a problem; node10 resolution knows no subpaths.
  process.stdout.write(
    run(
      bin('attw'),
      [tarball, '--profile', 'node16', '--ignore-rules', 'cjs-resolves-to-esm'],
      root,
    ),
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
