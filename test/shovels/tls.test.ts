/**
 * Shovels to a broker served over TLS (`amqps://` with RabbitMQ's `cacertfile` and `verify`
 * query parameters), and to a list of URIs, one chosen at random at each connect.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { listen } from '../../src/server/server.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { poll } from './poll.js';

let dir: string;
let cert: string;
let key: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mqlite-shovel-tls-'));
  cert = path.join(dir, 'cert.pem');
  key = path.join(dir, 'key.pem');
  // A self-signed certificate for 127.0.0.1: its own CA.
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1'],
      ...['-keyout', key, '-out', cert, '-subj', '/CN=localhost'],
      ...['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    ],
    { stdio: 'ignore' },
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const thing of open.splice(0).reverse()) await thing.close().catch(() => {});
});

async function served() {
  const remote = await Broker.open();
  open.push(remote);
  const server = await listen(remote, {
    port: 0,
    tls: { cert: readFileSync(cert), key: readFileSync(key), port: 0 },
  });
  open.push(server);
  return { remote, server };
}

async function shovelTo(uri: string | string[], clock = new ManualClock()) {
  const b = await Broker.open({ clock });
  open.push(b);
  await (await b.queue('in')).publish('sealed');
  await b.setShovel('up', {
    'src-uri': 'amqp://',
    'src-queue': 'in',
    'dest-uri': uri,
    'dest-queue': 'central',
    'reconnect-delay': 1,
  });
  return b;
}

describe('a shovel over TLS', () => {
  test('amqps:// with cacertfile trusts the broker certificate and forwards', async () => {
    const { remote, server } = await served();
    const tlsUrl = `amqps://guest:guest@127.0.0.1:${server.tlsPort}`;
    const b = await shovelTo(`${tlsUrl}?cacertfile=${encodeURIComponent(cert)}`);
    const [status] = await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 1,
      'the message forwarded over TLS',
    );
    expect((await remote.queue('central')).messageCount).toBe(1);
    expect(status?.destination).toMatch(/^amqps:\/\/guest:\*\*\*@127\.0\.0\.1:\d+\?cacertfile=/);
  });

  test('a certificate no CA vouches for is refused, unless verify=verify_none', async () => {
    const { server } = await served();
    const tlsUrl = `amqps://guest:guest@127.0.0.1:${server.tlsPort}`;
    const refused = await shovelTo(tlsUrl);
    const [down] = await poll(
      () => refused.shovels(),
      (s) => s[0]?.state === 'terminated',
      'refused',
    );
    expect(down?.reason).toMatch(/self[- ]signed certificate/);
    const trusting = await shovelTo(`${tlsUrl}?verify=verify_none`);
    await poll(
      () => trusting.shovels(),
      (s) => s[0]?.forwarded === 1,
      'forwarded without verifying',
    );
  });
});

describe('a list of URIs', () => {
  test('a dead URI picked first falls over to a live one at the next attempt', async () => {
    const { remote, server } = await served();
    const dead = 'amqp://guest:guest@127.0.0.1:1';
    // The first pick is the dead URI, the next the live one.
    vi.spyOn(Math, 'random').mockReturnValueOnce(0).mockReturnValue(0.99);
    const clock = new ManualClock();
    const b = await shovelTo([dead, server.url], clock);
    const [down] = await poll(
      () => b.shovels(),
      (s) => s[0]?.state === 'terminated',
      'the dead URI refused',
    );
    expect(down?.destination).toBe('amqp://guest:***@127.0.0.1:1');
    expect(down?.reason).toContain('ECONNREFUSED');
    clock.advance(1000);
    const [up] = await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 1,
      'forwarded through the live URI',
    );
    expect(up?.destination).toBe(server.url.replace(':guest@', ':***@'));
    expect((await remote.queue('central')).messageCount).toBe(1);
  });
});
