/**
 * The dashboard's files, served by the management listener at `/` and the assets' paths. A fixed
 * table of paths, read once: a request names one of them or is left to the listener's 404, so no
 * path reaches the file system. The page is plain HTML, CSS and ES modules from `public/` beside
 * this module, plus uPlot (a dependency) for the rate charts.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { extname, join, relative, sep } from 'node:path';

/** One file as answered: its bytes, content type and entity tag. */
interface DashboardFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * The page talks to this listener alone: the policy makes the browser refuse anything else, and
 * no inline script or style runs.
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * Where `public/` is: beside this module in the sources and the ES build. The CommonJS bundle
 * (`dist/cjs/mqlite.js`), where `import.meta` is empty, reads the ES build's copy.
 */
function publicFolder(): string {
  const here =
    (import.meta as { dirname?: string }).dirname ??
    join(__dirname, '..', 'management', 'dashboard');
  return join(here, 'public');
}

/** Every file under `folder`, by URL path (`/app.js`, `/pages/queues.js`). */
function readFolder(folder: string, into: Map<string, DashboardFile>): void {
  for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const type = TYPES[extname(entry.name)];
    if (type === undefined) continue;
    into.set(`/${relative(folder, file).split(sep).join('/')}`, answer(readFileSync(file), type));
  }
}

function answer(body: Buffer, type: string): DashboardFile {
  const digest = createHash('sha256').update(body).digest('base64url').slice(0, 22);
  return { body, type, etag: `"${digest}"` };
}

let files: Map<string, DashboardFile> | undefined;

/** The table of paths, read on the first request. */
function dashboardFiles(): Map<string, DashboardFile> {
  if (files !== undefined) return files;
  const folder = publicFolder();
  const table = new Map<string, DashboardFile>();
  readFolder(folder, table);
  const index = table.get('/index.html');
  if (index !== undefined) table.set('/', index);
  // uPlot's own build, from the installed dependency: the package carries no copy of it.
  const uplot = createRequire(join(folder, 'index.html'));
  for (const [path, asset] of [
    ['/vendor/uPlot.min.js', 'uplot/dist/uPlot.iife.min.js'],
    ['/vendor/uPlot.min.css', 'uplot/dist/uPlot.min.css'],
  ] as const) {
    const file = uplot.resolve(asset);
    table.set(path, answer(readFileSync(file), TYPES[extname(file)]!));
  }
  files = table;
  return table;
}

/**
 * Answers a request for one of the dashboard's files, and says whether it did: a path that is
 * none of them is left to the listener's 404. GET and HEAD, with an entity tag the browser
 * revalidates (`no-cache`), so an upgraded package serves its new page at once; another method is
 * a 405.
 */
export function serveDashboard(request: IncomingMessage, response: ServerResponse): boolean {
  const pathname = new URL(request.url ?? '/', 'http://localhost').pathname;
  const file = dashboardFiles().get(pathname);
  if (file === undefined) return false;
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, {
      Allow: 'GET, HEAD',
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
    });
    response.end('Method Not Allowed\n');
    return true;
  }
  response.setHeader('Cache-Control', 'no-cache');
  response.setHeader('ETag', file.etag);
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.setHeader(name, value);
  if (request.headers['if-none-match'] === file.etag) {
    response.writeHead(304).end();
    return true;
  }
  response.writeHead(200, { 'Content-Type': file.type, 'Content-Length': file.body.length });
  response.end(request.method === 'HEAD' ? undefined : file.body);
  return true;
}
