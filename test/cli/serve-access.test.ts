import { existsSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/server/auth.js';
import { RawClient } from '../server/raw-client.js';
import { rawLogin } from '../support/amqp-login.js';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/data-dirs.js';
import { bodyText, serveEach, until } from '../support/serve.js';

const serve = serveEach();

/**
 * A users file in RabbitMQ's definitions shape: app in / and orders, auditor in / only, where it
 * may read and nothing else.
 */
function usersFile(dir: string): string {
  const file = path.join(dir, 'users.json');
  const user = (name: string, password: string) => ({
    name,
    password_hash: hashPassword(password),
    hashing_algorithm: 'rabbit_password_hashing_sha256',
    tags: [],
  });
  const permission = (name: string, vhost: string, configure = '.*', write = '.*') => ({
    user: name,
    vhost,
    configure,
    write,
    read: '.*',
  });
  const definitions = {
    users: [user('app', 's3cret'), user('auditor', 'look')],
    vhosts: [{ name: '/' }, { name: 'orders' }],
    permissions: [
      permission('app', '/'),
      permission('app', 'orders'),
      permission('auditor', '/', '', ''),
    ],
  };
  writeFileSync(file, JSON.stringify(definitions));
  return file;
}

/** Connects to `url`, runs `call` on a channel and closes: the channel's error, if it had one. */
async function onChannel(url: string, call: (channel: amqplib.Channel) => Promise<unknown>) {
  const connection = await amqplib.connect(url);
  connection.on('error', () => {});
  const channel = await connection.createChannel();
  channel.on('error', () => {});
  try {
    return await call(channel);
  } finally {
    await connection.close();
  }
}

const LOGIN_REFUSED = {
  replyCode: 403,
  replyText:
    'ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile.',
};

describe('mqlite serve --users', () => {
  it('logs why it refused a login, which the client is told only to look up', async () => {
    const server = await serve(['--port', '0', '--users', usersFile(tempDir()), '--verbose']);
    expect(await rawLogin(server.port, { user: 'app', password: 'wrong' })).toEqual(LOGIN_REFUSED);
    await until(() => server.output.stdout.includes('closing AMQP connection'), 'the log line');
    expect(server.output.stdout).toContain(
      `${LOGIN_REFUSED.replyText} (PLAIN login refused: user 'app' - invalid credentials)`,
    );
  });

  it('logs in a user of the file with its password and refuses a wrong one with 403', async () => {
    const server = await serve(['--port', '0', '--users', usersFile(tempDir())]);
    const client = await rawLogin(server.port, { user: 'app', password: 's3cret' });
    expect(client).toBeInstanceOf(RawClient);
    (client as RawClient).destroy();
    expect(await rawLogin(server.port, { user: 'app', password: 'wrong' })).toEqual(LOGIN_REFUSED);
    expect(await rawLogin(server.port, { user: 'nobody', password: 's3cret' })).toEqual(
      LOGIN_REFUSED,
    );
    // guest is not in the file.
    expect(await rawLogin(server.port, { user: 'guest', password: 'guest' })).toEqual(
      LOGIN_REFUSED,
    );
  });

  it('closes with 530 NOT_ALLOWED a vhost the user may not use, or one that does not exist', async () => {
    const server = await serve(['--port', '0', '--users', usersFile(tempDir())]);
    expect(
      await rawLogin(server.port, { user: 'auditor', password: 'look', vhost: 'orders' }),
    ).toEqual({
      replyCode: 530,
      replyText: "NOT_ALLOWED - access to vhost 'orders' refused for user 'auditor'",
    });
    expect(
      await rawLogin(server.port, { user: 'app', password: 's3cret', vhost: 'shipping' }),
    ).toEqual({ replyCode: 530, replyText: 'NOT_ALLOWED - vhost shipping not found' });
  });

  it("applies the users' permissions, and names the vhost in refusals", async () => {
    const server = await serve(['--port', '0', '--users', usersFile(tempDir())]);
    const auditor = server.url.replace('amqp://', 'amqp://auditor:look@');
    await expect(onChannel(auditor, (c) => c.assertQueue('audit'))).rejects.toThrow(
      "ACCESS_REFUSED - access to queue 'audit' in vhost '/' refused for user 'auditor'",
    );
    // It may read what another user declared.
    const app = server.url.replace('amqp://', 'amqp://app:s3cret@');
    await onChannel(app, (c) => c.assertQueue('audit'));
    expect(await onChannel(auditor, (c) => c.get('audit'))).toBe(false);
    const orders = `${app}/orders`;
    await expect(onChannel(orders, (c) => c.checkQueue('missing'))).rejects.toThrow(
      "NOT_FOUND - no queue 'missing' in vhost 'orders'",
    );
  });

  it('keeps each vhost its own queues, in the data directory, across a restart', async () => {
    const dir = tempDir();
    const users = usersFile(dir);
    const data = path.join(dir, 'data');
    const args = ['--data', data, '--port', '0', '--users', users];
    const first = await serve(args);
    const base = first.url.replace('amqp://', 'amqp://app:s3cret@');
    const orders = await amqplib.connect(`${base}/orders`);
    const channel = await orders.createConfirmChannel();
    await channel.assertQueue('invoices', { durable: true });
    channel.sendToQueue('invoices', Buffer.from('INV-1'), { persistent: true });
    await channel.waitForConfirms();
    await orders.close();
    // The same name in / is another queue: there is none.
    await expect(onChannel(base, (c) => c.checkQueue('invoices'))).rejects.toThrow(
      "NOT_FOUND - no queue 'invoices' in vhost '/'",
    );
    expect((await first.stop()).code).toBe(0);
    expect(existsSync(path.join(data, '~vhosts', 'orders', 'invoices'))).toBe(true);

    const second = await serve(args);
    const again = await amqplib.connect(
      `${second.url.replace('amqp://', 'amqp://app:s3cret@')}/orders`,
    );
    const got = await (await again.createChannel()).get('invoices', { noAck: true });
    expect(bodyText(got)).toBe('INV-1');
    await again.close();
  });

  it('exits 1 naming the file and the entry for a malformed users file', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'users.json');
    writeFileSync(file, JSON.stringify({ users: [{ name: 'app', password_hash: 'not base64!' }] }));
    const run = await runCli(['serve', '--port', '0', '--users', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`users file ${file}: user 'app': password_hash is not base64`);
  });
});

/** An address of this machine that is not loopback, if it has one. */
function externalAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return undefined;
}

describe('guest', () => {
  const external = externalAddress();

  it.skipIf(external === undefined)(
    'logs in from loopback only, unless --loopback-users says otherwise',
    async () => {
      const server = await serve(['--port', '0', '--host', '0.0.0.0']);
      const local = await amqplib.connect(`amqp://127.0.0.1:${server.port}`);
      await local.close();
      await expect(amqplib.connect(`amqp://${external}:${server.port}`)).rejects.toThrow(
        'ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN',
      );
      const open = await serve(['--port', '0', '--host', '0.0.0.0', '--loopback-users', '']);
      const allowed = await amqplib.connect(`amqp://${external}:${open.port}`);
      await allowed.close();
    },
  );
});
