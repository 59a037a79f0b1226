// Packs the tarball as `npm publish` would and checks it as a user gets it: its file list, then,
// installed into a scratch project (from the tarball, its dependencies from the npm cache), an
// ES module and a CommonJS script that import it, a default Jest project (CommonJS, no config),
// TypeScript projects under every module resolution TypeScript 5 and 7 accept, then publint and
// arethetypeswrong. TypeScript 5 is the checkout's; TypeScript 7 is installed into the scratch
// folder (`TS7_VERSION`, default 7).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const run = (file, args, cwd) =>
  execFileSync(file, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
const npm = (args, cwd) =>
  run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], cwd);
const { version, devDependencies } = JSON.parse(
  readFileSync(path.join(root, 'package.json'), 'utf8'),
);

/** Writes `files` (path → text) under `dir`. */
function write(dir, files) {
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
}

const scratch = mkdtempSync(path.join(tmpdir(), 'mqlite-package-'));
try {
  const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', scratch], root));
  const tarball = path.join(scratch, packed.filename);
  const files = packed.files.map((f) => f.path);
  const stray = files.filter(
    (f) =>
      !/^(dist\/.*\.(js|d\.ts)|dist\/management\/dashboard\/public\/.*\.(html|css|svg)|dist\/cjs\/package\.json|README\.md|LICENSE|package\.json)$/.test(
        f,
      ),
  );
  if (stray.length > 0)
    throw new Error(`the tarball holds more than dist, README, LICENSE: ${stray}`);
  for (const needed of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/cjs/index.js',
    'dist/management/dashboard/public/index.html',
    'LICENSE',
  ])
    if (!files.includes(needed)) throw new Error(`the tarball lacks ${needed}`);
  console.log(`${packed.filename}: ${files.length} files, ${packed.size} bytes`);

  const app = path.join(scratch, 'app');
  write(app, { 'package.json': '{ "name": "app", "private": true }\n' });
  // What a TypeScript consumer installs beside mqlite: Node's types; amqplib for the Jest test.
  const beside = ['@types/node', 'amqplib'].map((name) => `${name}@${devDependencies[name]}`);
  npm(['install', tarball, ...beside], app);

  const use = `const broker = await Broker.open();
const q = await broker.queue('q');
await q.publish('hello');
const msg = await q.get({ noAck: true });
const clock = new ManualClock(0);
if (msg?.bodyString() !== 'hello' || clock.now() !== 0) throw new Error('unexpected result');
await broker.close();
console.log('ok');`;
  const esm = `import { Broker, type Message } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\nconst typed: Message | undefined = undefined;\nvoid typed;\n${use}\n`;
  const cjs = `import { Broker } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\n(async () => {\n${use}\n})();\n`;
  write(app, {
    'esm.mjs': `import { Broker } from 'mqlite';\nimport { ManualClock } from 'mqlite/testing';\n${use}\n`,
    'cjs.cjs': `const { Broker } = require('mqlite');\nconst { ManualClock } = require('mqlite/testing');\n(async () => {\n${use}\n})();\n`,
  });
  // Every moduleResolution TypeScript accepts, with the module kind it goes with; no `types`
  // entry, which TypeScript 7 defaults to none: mqlite's declarations name Node's themselves.
  const projects = {
    // TypeScript 5's default for `module: commonjs`; TypeScript 7 no longer accepts it.
    node10: {
      options: { module: 'commonjs', moduleResolution: 'node10' },
      file: 'main.ts',
      out: 'main.js',
      ts7: false,
    },
    node16: {
      options: { module: 'node16', moduleResolution: 'node16' },
      file: 'main.mts',
      out: 'main.mjs',
    },
    nodenext: {
      options: { module: 'nodenext', moduleResolution: 'nodenext' },
      file: 'main.cts',
      out: 'main.cjs',
    },
    bundler: {
      options: { module: 'preserve', moduleResolution: 'bundler' },
      file: 'main.mts',
      out: 'main.mjs',
    },
  };
  const compilers = { 'TypeScript 5': bin('tsc') };
  const ts7 = path.join(scratch, 'ts7');
  write(ts7, { 'package.json': '{ "name": "ts7", "private": true }\n' });
  npm(['install', `typescript@${process.env.TS7_VERSION ?? '7'}`], ts7);
  compilers['TypeScript 7'] = path.join(ts7, 'node_modules', '.bin', 'tsc');
  const outputs = ['esm.mjs', 'cjs.cjs'];
  for (const [compiler, tsc] of Object.entries(compilers)) {
    const major = compiler.split(' ')[1];
    for (const [resolution, { options, file, out, ts7: accepted = true }] of Object.entries(
      projects,
    )) {
      if (major === '7' && !accepted) continue;
      const dir = path.join(app, `ts${major}-${resolution}`);
      const code = file.endsWith('.ts') || file.endsWith('.cts') ? cjs : esm;
      const compilerOptions = { ...options, target: 'es2022', strict: true, outDir: 'out' };
      write(dir, { [file]: code, 'tsconfig.json': JSON.stringify({ compilerOptions }) });
      run(tsc, ['-p', dir], app);
      console.log(`${compiler}, moduleResolution ${resolution}: types resolve and compile`);
      outputs.push(path.join(path.basename(dir), 'out', out));
    }
  }
  // The management listener's dashboard from each build: the page, its modules, the chart library.
  const dashboard = `const broker = await Broker.open();
const server = await listen(broker, { port: 0, management: { port: 0 } });
for (const path of ['/', '/app.js', '/vendor/uPlot.min.js']) {
  const answer = await fetch(new URL(path, server.managementUrl));
  if (answer.status !== 200) throw new Error(\`\${path}: \${answer.status}\`);
}
await server.close();
await broker.close();
console.log('ok');`;
  write(app, {
    'dashboard.mjs': `import { Broker } from 'mqlite';\nimport { listen } from 'mqlite/server';\n${dashboard}\n`,
    'dashboard.cjs': `const { Broker } = require('mqlite');\nconst { listen } = require('mqlite/server');\n(async () => {\n${dashboard}\n})();\n`,
  });
  outputs.push('dashboard.mjs', 'dashboard.cjs');
  for (const file of outputs) {
    const printed = run(process.execPath, [file], app).trim();
    if (printed !== 'ok') throw new Error(`${file} printed ${printed}`);
    console.log(`${file}: ok`);
  }

  // A default Jest project: CommonJS, no configuration, Jest's own module loader.
  const jest = path.join(app, 'jest');
  write(jest, {
    'package.json': '{ "name": "jest-app", "private": true, "scripts": { "test": "jest" } }\n',
    'mqlite.test.js': readFileSync(new URL('package-jest-app.cjs', import.meta.url), 'utf8'),
  });
  process.stdout.write(run(bin('jest'), ['--ci', '--colors=false'], jest));
  console.log('jest (CommonJS, default config): ok');

  // The binary as npm links it into the consumer's node_modules/.bin.
  const printed = run(path.join(app, 'node_modules', '.bin', 'mqlite'), ['--version'], app).trim();
  if (printed !== version) throw new Error(`mqlite --version printed ${printed}, not ${version}`);
  console.log(`mqlite --version: ${printed}`);

  process.stdout.write(run(bin('publint'), ['run', '--strict', tarball], root));
  process.stdout.write(run(bin('attw'), [tarball], root));
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
