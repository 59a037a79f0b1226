import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/data-dirs.js';
import { bodyText, serveEach, until } from '../support/serve.js';

const serve = serveEach();

describe('mqlite serve', () => {
  it('prints the URL it listens on, one line, and serves AMQP clients there', async () => {
    const server = await serve(['--port', '0']);
    expect(server.url).toMatch(/^amqp:\/\/127\.0\.0\.1:\d+$/);
    const connection = await amqplib.connect(server.url);
    const channel = await connection.createChannel();
    await channel.assertQueue('greetings');
    channel.sendToQueue('greetings', Buffer.from('hello'));
    let body: string | undefined;
    await until(
      async () => (body = bodyText(await channel.get('greetings', { noAck: true }))) !== undefined,
      'the message',
    );
    expect(body).toBe('hello');
    await connection.close();
    const run = await server.stop();
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${server.url}\n`);
  });

  it('--url-file writes the URL it listens on for a harness in another language', async () => {
    const file = join(tempDir(), 'url');
    const server = await serve(['--port', '0', '--url-file', file]);
    expect(readFileSync(file, 'utf8')).toBe(`${server.url}\n`);
    const connection = await amqplib.connect(readFileSync(file, 'utf8').trim());
    await connection.close();
    expect((await server.stop()).code).toBe(0);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${signal} closes connections with 320 CONNECTION_FORCED, keeps what was stored and exits 0`, async () => {
      const data = tempDir();
      const server = await serve(['--data', data, '--port', '0']);
      const connection = await amqplib.connect(server.url);
      const closed = new Promise<Error | undefined>((resolve) => connection.once('close', resolve));
      connection.on('error', () => {});
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue('kept', { durable: true });
      channel.sendToQueue('kept', Buffer.from('durable'), { persistent: true });
      await channel.waitForConfirms();
      const run = await server.stop(signal);
      expect(run.code).toBe(0);
      expect((await closed)?.message).toContain(
        '320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - broker forced connection closure with reason \'shutdown\'"',
      );
      // Reopened on the same directory: the message is there.
      const again = await serve(['--data', data, '--port', '0']);
      const c2 = await amqplib.connect(again.url);
      const ch2 = await c2.createChannel();
      const got = await ch2.get('kept', { noAck: true });
      expect(bodyText(got)).toBe('durable');
      await c2.close();
      expect((await again.stop()).code).toBe(0);
    });
  }

  it('refuses at once, exit 1, a directory another serve holds, naming its pid', async () => {
    const data = tempDir();
    const first = await serve(['--data', data, '--port', '0']);
    const second = await runCli(['serve', '--data', data, '--port', '0']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`locked by process ${first.child.pid}`);
    expect(second.stdout).toBe('');
  });

  it('with --verbose prints one line per connection event', async () => {
    const server = await serve(['--port', '0', '--verbose']);
    const connection = await amqplib.connect(server.url);
    await until(() => server.output.stdout.includes('granted access'), 'the open line');
    await connection.close();
    await until(() => server.output.stdout.includes('closing AMQP connection'), 'the close line');
    const lines = server.output.stdout.trim().split('\n');
    expect(lines[0]).toBe(server.url);
    expect(lines.slice(1).map((line) => line.replace(/127\.0\.0\.1:\d+/, 'PEER'))).toEqual([
      'accepting AMQP connection PEER',
      "connection PEER: user 'guest' authenticated and granted access to vhost '/'",
      "closing AMQP connection PEER (vhost '/', user 'guest')",
    ]);
  });

  it('exits 2 with the usage and the nearest option for an unknown one', async () => {
    const run = await runCli(['serve', '--prot', '5672']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("mqlite serve: unknown option '--prot' (did you mean '--port'?)");
    expect(run.stderr).toContain('Usage: mqlite serve');
  });

  it('refuses a --shovel that is not name=json, or that RabbitMQ would refuse, in its words', async () => {
    const malformed = await runCli(['serve', '--port', '0', '--shovel', 'up']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("--shovel takes <name>=<json>, got 'up'");
    const refused = await runCli(['serve', '--port', '0', '--shovel', 'up={"src-uri":"amqp://"}']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      '--shovel up: PRECONDITION_FAILED - Validation failed: Key "dest-uri" not found in up',
    );
  });

  it('refuses a --data path that cannot be a directory, exit 2, with no INTERNAL_ERROR', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a directory');
    const run = await runCli(['serve', '--data', join(file, 'data'), '--port', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `mqlite serve: '${join(file, 'data')}': cannot create the data directory ('${file}': not a directory)\n`,
    );
    expect(run.stdout).toBe('');
  });

  it('exits 1 naming the port when it is taken', async () => {
    const first = await serve(['--port', '0']);
    const run = await runCli(['serve', '--port', String(first.port)]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('EADDRINUSE');
  });

  it('--help prints the options', async () => {
    const run = await runCli(['serve', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('--tls-cert');
  });
});
