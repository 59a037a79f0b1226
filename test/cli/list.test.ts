/**
 * `mqlite list` and `mqlite peek --url`: an operator's view of a running `mqlite serve
 * --management-port`, through its management API.
 */
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { tempDir } from '../support/data-dirs.js';
import { serveEach, until } from '../support/serve.js';

const serve = serveEach();

async function served(data?: string) {
  const args = ['--port', '0', '--management-port', '0', ...(data ? ['--data', data] : [])];
  const server = await serve(args);
  await until(() => server.output.stdout.split('\n').length > 2, 'the management URL line');
  const managementUrl = server.output.stdout.split('\n')[1]!;
  expect(managementUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const url = managementUrl.replace('http://', 'http://guest:guest@');
  return { server, url };
}

describe('mqlite list', () => {
  it('lists queues with their depth, connections and consumers of a running server', async () => {
    const { server, url } = await served();
    const connection = await amqplib.connect(server.url, {
      clientProperties: { connection_name: 'billing' },
    });
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('invoices');
    await channel.assertQueue('watched');
    for (let i = 0; i < 3; i++) channel.sendToQueue('invoices', Buffer.from(`invoice ${i}`));
    await channel.waitForConfirms();
    await channel.consume('watched', () => {}, { consumerTag: 'watcher' });

    const queues = await runCli(['list', 'queues', '--url', url]);
    expect(queues.code).toBe(0);
    expect(queues.stdout).toMatch(/^vhost\s+name\s+messages\s+ready\s+unacked\s+consumers/);
    expect(queues.stdout).toMatch(/\/\s+invoices\s+3\s+3\s+0\s+0/);
    expect(queues.stdout).toMatch(/\/\s+watched\s+0\s+0\s+0\s+1/);
    const json = JSON.parse((await runCli(['list', 'queues', '--url', url, '--json'])).stdout);
    expect(json).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'invoices', messages: 3 })]),
    );
    expect((await runCli(['list', 'connections', '--url', url])).stdout).toMatch(
      /guest\s+\/\s+1\s+billing/,
    );
    expect((await runCli(['list', 'consumers', '--url', url])).stdout).toMatch(/watched\s+watcher/);
    expect((await runCli(['list', 'exchanges', '--url', url])).stdout).toContain('amq.topic');
    await connection.close();
  });

  it('says what is wrong: an unknown kind, a server that does not answer, wrong credentials', async () => {
    expect((await runCli(['list', 'sheep'])).stderr).toContain('list what? One of queues');
    const down = await runCli(['list', 'queues', '--url', 'http://127.0.0.1:1']);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('does not answer');
    const { url } = await served();
    const wrong = await runCli([
      'list',
      'queues',
      '--url',
      url.replace('guest:guest', 'guest:nope'),
    ]);
    expect(wrong.stderr).toContain('HTTP 401 (Login failed)');
  });
});

describe('mqlite peek of a running server', () => {
  it('shows messages through the management API and leaves them in the queue', async () => {
    const data = tempDir();
    const { server, url } = await served(data);
    const connection = await amqplib.connect(server.url);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('letters');
    channel.sendToQueue('letters', Buffer.from('dear reader'), { messageId: 'l1' });
    await channel.waitForConfirms();
    await connection.close();

    const refused = await runCli(['peek', data, 'letters']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--url');
    const peeked = await runCli(['peek', '--url', url, 'letters']);
    expect(peeked.code).toBe(0);
    expect(peeked.stdout).toContain('letters: 1 shown (requeued)');
    expect(peeked.stdout).toContain('dear reader');
    expect(peeked.stdout).toContain('"message_id":"l1"');
    expect((await runCli(['list', 'queues', '--url', url])).stdout).toMatch(/letters\s+1\s+1/);
  });
});
