import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import amqplib from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { bodyText, startServe } from '../support/serve.js';

let dir: string;
let cert: string;
let key: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mqlite-serve-tls-'));
  cert = path.join(dir, 'cert.pem');
  key = path.join(dir, 'key.pem');
  // A self-signed certificate for 127.0.0.1, which the client then trusts as its CA.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      cert,
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('mqlite serve --tls-cert --tls-key', () => {
  it('serves amqps:// on a port of its own beside amqp://', async () => {
    const server = await startServe(
      ['--port', '0', '--tls-port', '0', '--tls-cert', cert, '--tls-key', key, '--verbose'],
      2,
    );
    try {
      const tlsUrl = server.output.stdout.split('\n')[1]!;
      expect(tlsUrl).toMatch(/^amqps:\/\/127\.0\.0\.1:\d+$/);
      expect(new URL(tlsUrl).port).not.toBe(String(server.port));
      const secure = await amqplib.connect(tlsUrl, { ca: [readFileSync(cert)] });
      const channel = await secure.createConfirmChannel();
      await channel.assertQueue('sealed');
      channel.sendToQueue('sealed', Buffer.from('over TLS'));
      await channel.waitForConfirms();
      // Both listeners serve the same broker.
      const plain = await amqplib.connect(server.url);
      expect(bodyText(await (await plain.createChannel()).get('sealed', { noAck: true }))).toBe(
        'over TLS',
      );
      await plain.close();
      await secure.close();
      expect(server.output.stdout).toMatch(/accepting AMQP connection 127\.0\.0\.1:\d+ \(TLS\)/);
    } finally {
      expect((await server.stop()).code).toBe(0);
    }
  });

  it('refuses a client that does not trust the certificate', async () => {
    const server = await startServe(
      ['--port', '0', '--tls-port', '0', '--tls-cert', cert, '--tls-key', key],
      2,
    );
    try {
      const tlsUrl = server.output.stdout.split('\n')[1]!;
      await expect(amqplib.connect(tlsUrl)).rejects.toThrow(/self[- ]signed certificate/);
    } finally {
      await server.stop();
    }
  });

  it('exits 2 for --tls-cert without --tls-key', async () => {
    const run = await runCli(['serve', '--port', '0', '--tls-cert', cert]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--tls-cert and --tls-key go together');
  });
});
