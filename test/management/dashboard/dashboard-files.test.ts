/**
 * The dashboard's files as a browser and a prober get them: content types, revalidation, HEAD,
 * and nothing but the page's own files, whatever the path says.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { serveDashboard } from '../../../src/management/dashboard/dashboard-files.js';

const PUBLIC = join(import.meta.dirname, '../../../src/management/dashboard/public');

let server: Server;
let port: number;

beforeAll(async () => {
  // As the management listener does: its own 404 for what is none of the files.
  server = createServer((req, res) => {
    if (!serveDashboard(req, res)) res.writeHead(404).end('not a file of the page');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request with `path` sent as written (no client-side normalising of `..`). */
function send(path: string, method = 'GET', headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the dashboard files', () => {
  test('/ is the page, revalidated on every load and confined to this listener', async () => {
    const page = await send('/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toBe(readFileSync(join(PUBLIC, 'index.html'), 'utf8'));
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });

  test('every file the page and its modules name is served with its type', async () => {
    const named = new Set<string>();
    const html = readFileSync(join(PUBLIC, 'index.html'), 'utf8');
    for (const [, path] of html.matchAll(/(?:src|href)="([^"#]+)"/g)) named.add(`/${path}`);
    for (const module of ['app.js', 'pages/queue.js']) {
      const code = readFileSync(join(PUBLIC, module), 'utf8');
      const from = module.includes('/') ? '/pages/' : '/';
      for (const [, path] of code.matchAll(/from '(\.{1,2}\/[^']+)'/g))
        named.add(new URL(path!, `http://x${from}`).pathname);
    }
    expect([...named]).toEqual(
      expect.arrayContaining(['/style.css', '/app.js', '/vendor/uPlot.min.js', '/pages/queue.js']),
    );
    const types: Record<string, string> = {
      css: 'text/css; charset=utf-8',
      js: 'text/javascript; charset=utf-8',
      svg: 'image/svg+xml',
    };
    for (const path of named) {
      const answer = await send(path);
      expect({ path, status: answer.status }).toEqual({ path, status: 200 });
      expect(answer.headers['content-type']).toBe(types[path.split('.').pop()!]);
    }
  });

  test('the chart library is the installed uPlot', async () => {
    const script = await send('/vendor/uPlot.min.js');
    expect(script.body).toContain('uPlot');
    const installed = readFileSync(
      join(import.meta.dirname, '../../../node_modules/uplot/dist/uPlot.iife.min.js'),
      'utf8',
    );
    expect(script.body).toBe(installed);
  });

  test('HEAD answers the headers of GET without the body', async () => {
    const get = await send('/app.js');
    const head = await send('/app.js', 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.body)));
    expect(head.headers.etag).toBe(get.headers.etag);
  });

  test('a browser holding the current version gets 304', async () => {
    const { headers } = await send('/style.css');
    const again = await send('/style.css', 'GET', { 'If-None-Match': headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    const stale = await send('/style.css', 'GET', { 'If-None-Match': '"old"' });
    expect(stale.status).toBe(200);
  });

  test.each([
    '/nope.js',
    '/dashboard-files.ts',
    '/../dashboard-files.ts',
    '/%2e%2e/dashboard-files.ts',
    '/..%2fdashboard-files.ts',
    '/pages/../../../../package.json',
    '/public/index.html',
    '/index.html/',
    '//etc/passwd',
    '/vendor/uPlot.cjs.js',
  ])('%s is not one of the files: left to the listener', async (path) => {
    const answer = await send(path);
    expect(answer.status).toBe(404);
    expect(answer.body).toBe('not a file of the page');
  });

  test('another method is refused with the ones allowed', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const answer = await send('/', method);
      expect(answer.status).toBe(405);
      expect(answer.headers.allow).toBe('GET, HEAD');
      expect(answer.body).toBe('Method Not Allowed\n');
    }
  });
});
