// The dashboard's page (HTML, CSS and browser modules, which tsc leaves alone), copied beside the
// ES build of the module that serves it. The CommonJS bundle serves the same copy.
import { cpSync } from 'node:fs';

const root = new URL('..', import.meta.url);
cpSync(
  new URL('src/management/dashboard/public/', root),
  new URL('dist/management/dashboard/public/', root),
  { recursive: true },
);
