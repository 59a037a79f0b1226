// The CommonJS build, run by `npm run build` after tsc's ES build: for Jest and other loaders that
// cannot require() an ES module. One bundle, dist/cjs/mqlite.js, holds the library once; the entry
// points (mqlite, mqlite/testing, mqlite/testing/server, mqlite/server) each export their part of it, so a broker and a
// server required from CommonJS share their classes. The types are the ES build's declarations,
// copied under dist/cjs, whose package.json makes TypeScript read them as CommonJS.
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url);
const out = new URL('dist/cjs/', root);
const entries = {
  '.': 'index',
  './testing': 'testing/index',
  './testing/server': 'testing/server/index',
  './server': 'server/index',
};

mkdirSync(out, { recursive: true });
writeFileSync(new URL('package.json', out), '{ "type": "commonjs" }\n');
await build({
  stdin: {
    contents: Object.entries(entries)
      .map(([subpath, file]) => `export * as ${key(subpath)} from './${file}.js';\n`)
      .join(''),
    resolveDir: new URL('src/', root).pathname,
    sourcefile: 'mqlite.ts',
    loader: 'ts',
  },
  outfile: new URL('mqlite.js', out).pathname,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // rbush and its quickselect ship ES modules only, which Jest cannot load: they are bundled in.
  // The other dependencies have CommonJS entries and stay dependencies (the AMQP client is
  // required only when the first shovel starts: the dynamic import becomes a deferred require).
  external: ['@turf/*', 'fast-json-stable-stringify', '@cloudamqp/amqp-client'],
  logLevel: 'warning',
  // The dashboard's file server finds its page by import.meta.dirname, or by __dirname in here.
  logOverride: { 'empty-import-meta': 'silent' },
});
// The command line is an ES module of its own, not part of the library's API. The dashboard's
// page stays where the ES build has it: the bundle serves that copy.
const page = fileURLToPath(new URL('dist/management/dashboard/public', root));
for (const name of readdirSync(new URL('dist/', root))) {
  if (name === 'cjs' || name === 'cli' || name.endsWith('.js')) continue;
  cpSync(new URL(`dist/${name}`, root), new URL(name, out), {
    recursive: true,
    filter: (from) => !from.endsWith('.js') && from !== page,
  });
}

for (const [subpath, file] of Object.entries(entries)) {
  const depth = file.split('/').length - 1;
  writeFileSync(
    new URL(`${file}.js`, out),
    `'use strict';\nmodule.exports = require('${depth === 0 ? './' : '../'.repeat(depth)}mqlite.js').${key(subpath)};\n`,
  );
}
/**
 * The bundle's export that holds a subpath's module: `.` is `main`, `./testing` is `testing`,
 * `./testing/server` is `testingServer`.
 */
function key(subpath) {
  if (subpath === '.') return 'main';
  return subpath.slice(2).replace(/\/(\w)/g, (_, c) => c.toUpperCase());
}
