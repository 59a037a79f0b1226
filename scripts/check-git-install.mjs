// Installs this repository as a dependency the way `npm install <git url>` does, into a fresh
// folder, and loads it from an ES module and from CommonJS: npm clones the commit, installs its
// devDependencies and runs `prepare`, which builds dist/. The commit is HEAD of this checkout, so
// CI's clean clone checks what it runs on.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (file, args, cwd) =>
  execFileSync(file, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

const commit = run('git', ['rev-parse', 'HEAD'], root).trim();
const app = mkdtempSync(path.join(tmpdir(), 'mqlite-git-install-'));
try {
  writeFileSync(path.join(app, 'package.json'), '{ "name": "app", "private": true }\n');
  const source = `git+${pathToFileURL(root).href}#${commit}`;
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', source], app);
  const use = `const broker = await Broker.open();
await (await broker.queue('q')).publish('hello');
const clock = new ManualClock(0);
const server = await listen(broker, { port: 0 });
await server.close();
await broker.close();
console.log('ok', clock.now());`;
  writeFileSync(
    path.join(app, 'esm.mjs'),
    `import { Broker } from 'mqlite';\nimport { listen } from 'mqlite/server';\nimport { ManualClock } from 'mqlite/testing';\n${use}\n`,
  );
  writeFileSync(
    path.join(app, 'cjs.cjs'),
    `const { Broker } = require('mqlite');\nconst { listen } = require('mqlite/server');\nconst { ManualClock } = require('mqlite/testing');\n(async () => {\n${use}\n})();\n`,
  );
  for (const file of ['esm.mjs', 'cjs.cjs']) {
    const printed = run(process.execPath, [file], app).trim();
    if (printed !== 'ok 0') throw new Error(`${file} printed ${printed}`);
    console.log(`installed from ${source}, ${file}: ok`);
  }
} finally {
  rmSync(app, { recursive: true, force: true });
}
