import amqplib from 'amqplib';
import { afterAll, describe, expect, it } from 'vitest';
import { RawClient, rawFrame } from '../server/raw-client.js';
import { closedWith, rawLogin } from '../support/amqp-login.js';
import { runCli } from '../support/cli.js';
import { tempDir as freshDir, removeDataDirs } from '../support/data-dirs.js';
import { serveEach, until } from '../support/serve.js';

const serve = serveEach(['--port', '0']);
afterAll(removeDataDirs);

const guest = { user: 'guest', password: 'guest' };

async function open(port: number, frameMax?: number): Promise<RawClient> {
  const client = await rawLogin(port, { ...guest, ...(frameMax ? { frameMax } : {}) });
  if (!(client instanceof RawClient)) throw new Error(`refused: ${client.replyText}`);
  return client;
}

describe('mqlite serve limits', () => {
  it('--max-connections refuses the connection beyond it with 530, as RabbitMQ', async () => {
    const server = await serve(['--max-connections', '2']);
    const first = await amqplib.connect(server.url);
    const second = await amqplib.connect(server.url);
    expect(await rawLogin(server.port, guest)).toEqual({
      replyCode: 530,
      replyText: 'NOT_ALLOWED - connection refused: node connection limit (2) is reached',
    });
    await second.close();
    // A place is free again once the server released the closed connection.
    await until(async () => {
      const third = await rawLogin(server.port, guest);
      if (!(third instanceof RawClient)) return false;
      third.destroy();
      return true;
    }, 'a connection to be accepted again');
    await first.close();
  });

  it('--channel-max is proposed in tune; a channel beyond it is a 530 connection error', async () => {
    const server = await serve(['--channel-max', '2']);
    const client = await open(server.port);
    await client.openChannel(1);
    await client.openChannel(2);
    client.sendMethod(3, 'channel.open', { outOfBand: '' });
    expect(await closedWith(client)).toEqual({
      replyCode: 530,
      replyText:
        'NOT_ALLOWED - number of channels opened (2) has reached the negotiated channel_max (2)',
    });
  });

  it('--frame-max bounds frames, and so the header table, with 501 FRAME_ERROR', async () => {
    const server = await serve(['--frame-max', '4096']);
    const client = await open(server.port, 4096);
    await client.openChannel(1);
    client.sendMethod(1, 'basic.publish', {
      reserved1: 0,
      exchange: '',
      routingKey: 'q',
      mandatory: false,
      immediate: false,
    });
    // A content header whose header table takes it past frame-max.
    client.send(rawFrame(2, 1, Buffer.alloc(5000)));
    expect(await closedWith(client)).toEqual({
      replyCode: 501,
      replyText: 'FRAME_ERROR - type 2, all octets = <<>>: {frame_too_large,5000,4088}',
    });
  });

  it('--max-message-size refuses a larger body with 406 on its channel', async () => {
    const server = await serve(['--max-message-size', '1000']);
    const connection = await amqplib.connect(server.url);
    const channel = await connection.createConfirmChannel();
    const closed = new Promise<Error>((resolve) => channel.once('error', resolve));
    channel.sendToQueue('anywhere', Buffer.alloc(1001));
    expect((await closed).message).toContain(
      'PRECONDITION_FAILED - message size 1001 is larger than configured max size 1000',
    );
    // The connection stays.
    const other = await connection.createChannel();
    await other.close();
    await connection.close();
  });

  it('--memory-high-watermark 0 blocks every publisher at its first publish, as RabbitMQ', async () => {
    const server = await serve(['--memory-high-watermark', '0']);
    const connection = await amqplib.connect(server.url);
    const blocked = new Promise((resolve) => connection.on('blocked', resolve));
    const channel = await connection.createChannel();
    channel.sendToQueue('amq.gen-none', Buffer.from('held'));
    expect(await blocked).toBe('low on memory');
    await connection.close().catch(() => {});
  });

  it('exits 2 for a memory watermark that is neither a fraction nor bytes', async () => {
    const run = await runCli(['serve', '--port', '0', '--memory-high-watermark', '1.5']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--memory-high-watermark must be a fraction 0..1 or bytes');
  });

  it.each([
    ['bytes', '8000000GiB'],
    ['a multiple of the memory', '{mem_relative, 100000}'],
  ])(
    '--disk-free-limit in %s above the free space blocks every publisher, as RabbitMQ',
    async (_kind, limit) => {
      const server = await serve(['--data', freshDir(), '--disk-free-limit', limit]);
      const connection = await amqplib.connect(server.url);
      const blocked = new Promise((resolve) => connection.on('blocked', resolve));
      const channel = await connection.createChannel();
      channel.sendToQueue('amq.gen-none', Buffer.from('held'));
      expect(await blocked).toBe('low on disk');
      await connection.close().catch(() => {});
    },
  );

  it('exits 2 for a disk free limit that is not an amount, or without a data directory', async () => {
    const bad = await runCli([
      'serve',
      '--port',
      '0',
      '--data',
      freshDir(),
      '--disk-free-limit',
      '5 parsecs',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      "--disk-free-limit must be bytes (50MB, 1GiB) or '{mem_relative, 1.0}'",
    );
    const memory = await runCli(['serve', '--port', '0', '--disk-free-limit', '50MB']);
    expect(memory.code).toBe(2);
    expect(memory.stderr).toContain('--disk-free-limit needs --data');
  });

  it('exits 1 for a limit out of range, naming it', async () => {
    const run = await runCli(['serve', '--port', '0', '--max-message-size', String(2 ** 28)]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('maxMessageBytes must be an integer 1..134217728');
  });
});
