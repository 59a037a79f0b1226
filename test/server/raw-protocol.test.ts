import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Writer } from '../../src/server/wire/bytes.js';
import { methodFrame, writeContent } from '../../src/server/wire/methods.js';
import { HEADER, RawClient, rawFrame, rawMethodFrame } from './raw-client.js';
import { servedBroker } from './served.js';

const served = servedBroker();

/** Waits for connection.close and checks its code and text. */
async function expectConnectionClose(client: RawClient, code: number, text: RegExp) {
  const close = await client.method('connection.close', 0);
  const args = close.args as { replyCode: number; replyText: string };
  expect(args.replyCode).toBe(code);
  expect(args.replyText).toMatch(text);
  client.sendMethod(0, 'connection.close-ok', {});
  await client.waitClosed();
}

/**
 * Ends a connection the test drove into any state: it asks to close, answers the server's own
 * close if one comes, and waits for the socket to close.
 */
async function settle(client: RawClient) {
  client.sendMethod(0, 'connection.close', {
    replyCode: 200,
    replyText: 'bye',
    classId: 0,
    methodId: 0,
  });
  const reply = await client
    .frame((f) => f.channel === 0 && /^connection\.close/.test(f.method?.name ?? ''), 'a close')
    .catch(() => undefined);
  if (reply?.method?.name === 'connection.close') client.sendMethod(0, 'connection.close-ok', {});
  await client.waitClosed();
}

/** A fresh connection still works: declare and get on a new channel. */
async function expectServerHealthy() {
  const client = await RawClient.open(served.server.port);
  await client.openChannel(1);
  client.sendMethod(1, 'queue.declare', {
    reserved1: 0,
    queue: '',
    passive: false,
    durable: false,
    exclusive: true,
    autoDelete: true,
    nowait: false,
    arguments: {},
  });
  await client.method('queue.declare-ok', 1);
  client.destroy();
}

describe('protocol header', () => {
  test.each([
    ['AMQP 0-10', Buffer.from('AMQP\x01\x01\x00\x0a', 'latin1')],
    ['HTTP', Buffer.from('GET / HTTP/1.1\r\n\r\n')],
    ['AMQP 1.0', Buffer.from('AMQP\x00\x01\x00\x00', 'latin1')],
  ])('a %s header is answered with the 0-9-1 header, then the socket closes', async (_, bytes) => {
    const client = await RawClient.connect(served.server.port);
    client.send(bytes);
    await client.waitRaw(8);
    expect(client.raw.subarray(0, 8)).toEqual(HEADER);
    await client.waitClosed();
  });

  test('a header sent a byte at a time is accepted', async () => {
    const client = await RawClient.connect(served.server.port);
    for (const byte of HEADER) client.send(Buffer.from([byte]));
    const start = await client.method('connection.start');
    const args = start.args as { mechanisms: Buffer; serverProperties: Record<string, unknown> };
    expect(args.mechanisms.toString()).toBe('PLAIN AMQPLAIN');
    expect(args.serverProperties.capabilities).toMatchObject({
      publisher_confirms: true,
      'basic.nack': true,
      consumer_cancel_notify: true,
      per_consumer_qos: true,
      authentication_failure_close: true,
    });
    client.destroy();
  });
});

describe('handshake', () => {
  test('tune proposes channel-max 2047, frame-max 131072, heartbeat 60', async () => {
    const client = await RawClient.connect(served.server.port);
    client.send(HEADER);
    await client.method('connection.start');
    client.sendMethod(0, 'connection.start-ok', {
      clientProperties: {},
      mechanism: 'PLAIN',
      response: '\0guest\0guest',
      locale: 'en_US',
    });
    const tune = await client.method('connection.tune');
    expect(tune.args).toEqual({ channelMax: 2047, frameMax: 131072, heartbeat: 60 });
    client.destroy();
  });

  test('a wrong password is refused with 403 ACCESS_REFUSED (to a client announcing authentication_failure_close)', async () => {
    const client = await RawClient.connect(served.server.port);
    client.send(HEADER);
    await client.method('connection.start');
    client.sendMethod(0, 'connection.start-ok', {
      clientProperties: { capabilities: { authentication_failure_close: true } },
      mechanism: 'PLAIN',
      response: '\0guest\0wrong',
      locale: 'en_US',
    });
    await expectConnectionClose(
      client,
      403,
      /^ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN/,
    );
  });

  test('AMQPLAIN credentials are accepted', async () => {
    const client = await RawClient.connect(served.server.port);
    client.send(HEADER);
    await client.method('connection.start');
    // LOGIN and PASSWORD as a field table without its length prefix.
    const table = Buffer.concat([
      Buffer.from([5]),
      Buffer.from('LOGIN'),
      Buffer.from('S'),
      Buffer.from([0, 0, 0, 5]),
      Buffer.from('guest'),
      Buffer.from([8]),
      Buffer.from('PASSWORD'),
      Buffer.from('S'),
      Buffer.from([0, 0, 0, 5]),
      Buffer.from('guest'),
    ]);
    client.sendMethod(0, 'connection.start-ok', {
      clientProperties: {},
      mechanism: 'AMQPLAIN',
      response: table,
      locale: 'en_US',
    });
    await client.method('connection.tune');
    client.destroy();
  });

  test('frame-max below 4096 in tune-ok closes the socket without a connection.close, as RabbitMQ', async () => {
    const client = await RawClient.connect(served.server.port);
    client.send(HEADER);
    await client.method('connection.start');
    client.sendMethod(0, 'connection.start-ok', {
      clientProperties: {},
      mechanism: 'PLAIN',
      response: '\0guest\0guest',
      locale: 'en_US',
    });
    await client.method('connection.tune');
    client.sendMethod(0, 'connection.tune-ok', { channelMax: 2047, frameMax: 2048, heartbeat: 0 });
    await client.waitClosed();
    expect(client.count((f) => f.method?.name === 'connection.close')).toBe(0);
  });

  test('an unknown vhost is refused with 530', async () => {
    const client = await RawClient.connect(served.server.port);
    client.send(HEADER);
    await client.method('connection.start');
    client.sendMethod(0, 'connection.start-ok', {
      clientProperties: {},
      mechanism: 'PLAIN',
      response: '\0guest\0guest',
      locale: 'en_US',
    });
    await client.method('connection.tune');
    client.sendMethod(0, 'connection.tune-ok', {
      channelMax: 2047,
      frameMax: 131072,
      heartbeat: 0,
    });
    client.sendMethod(0, 'connection.open', {
      virtualHost: 'other',
      capabilities: '',
      insist: false,
    });
    await expectConnectionClose(client, 530, /^NOT_ALLOWED - vhost other not found/);
  });
});

describe('connection exceptions', () => {
  test('a channel method on channel 0 is 504 CHANNEL_ERROR, as RabbitMQ', async () => {
    const client = await RawClient.open(served.server.port);
    client.sendMethod(0, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
    await expectConnectionClose(
      client,
      504,
      /^CHANNEL_ERROR - unexpected method in connection state running$/,
    );
  });

  test('a method on a channel never opened is 504 CHANNEL_ERROR', async () => {
    const client = await RawClient.open(served.server.port);
    client.sendMethod(3, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
    await expectConnectionClose(client, 504, /^CHANNEL_ERROR - expected 'channel.open'/);
  });

  test('a second channel.open of one channel is 504', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'channel.open', { outOfBand: '' });
    await expectConnectionClose(client, 504, /second 'channel.open' seen/);
  });

  test('a body frame before its header is 505 UNEXPECTED_FRAME', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'basic.publish', {
      reserved1: 0,
      exchange: '',
      routingKey: 'x',
      mandatory: false,
      immediate: false,
    });
    client.send(rawFrame(3, 1, Buffer.from('body')));
    await expectConnectionClose(client, 505, /^UNEXPECTED_FRAME - /);
  });

  test('a body frame with no publish is 505', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.send(rawFrame(3, 1, Buffer.from('body')));
    await expectConnectionClose(client, 505, /^UNEXPECTED_FRAME - /);
  });

  test('a frame over the negotiated frame-max is 501 FRAME_ERROR', async () => {
    const client = await RawClient.open(served.server.port, { frameMax: 4096 });
    await client.openChannel(1);
    client.send(rawFrame(3, 1, Buffer.alloc(5000)));
    await expectConnectionClose(
      client,
      501,
      /^FRAME_ERROR - type 3, all octets = <<>>: {frame_too_large,5000,4088}$/,
    );
  });

  test('a declared size beyond frame-max fails before the bytes arrive', async () => {
    const client = await RawClient.open(served.server.port);
    // Only the frame's first 7 bytes: the server must not wait for (or buffer) 1 GB.
    client.send(rawFrame(3, 1, Buffer.alloc(0), 1 << 30).subarray(0, 7));
    await expectConnectionClose(client, 501, /^FRAME_ERROR - /);
  });

  test('a missing frame end marker is 501', async () => {
    const client = await RawClient.open(served.server.port);
    const frame = rawMethodFrame(0, 10, 50);
    frame[frame.length - 1] = 0;
    client.send(frame);
    await expectConnectionClose(client, 501, /end marker/);
  });

  test('an unknown class is 540 NOT_IMPLEMENTED', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.send(rawMethodFrame(1, 77, 10));
    await expectConnectionClose(client, 540, /^NOT_IMPLEMENTED - unknown class 77/);
  });

  test('an unknown method of a known class is 540', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.send(rawMethodFrame(1, 60, 99));
    await expectConnectionClose(client, 540, /^NOT_IMPLEMENTED - unknown method 99 of class 60/);
  });

  test('a table with an unknown type tag is 501 FRAME_ERROR', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    // queue.declare: reserved short, queue "q", bits, then a table with key "k" of type 'Z'.
    const args = Buffer.concat([
      Buffer.from([0, 0, 1]),
      Buffer.from('q'),
      Buffer.from([0]),
      Buffer.from([0, 0, 0, 3, 1]),
      Buffer.from('kZ'),
    ]);
    client.send(rawMethodFrame(1, 50, 10, args));
    await expectConnectionClose(
      client,
      501,
      /^FRAME_ERROR - cannot decode <<0,0,1,113,0,0,0,0,3,1,107,90>>/,
    );
  });

  test('a truncated method payload is 501 FRAME_ERROR, as RabbitMQ', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.send(rawMethodFrame(1, 50, 10, Buffer.from([0, 0, 200])));
    await expectConnectionClose(client, 501, /^FRAME_ERROR - cannot decode <<0,0,200>>/);
  });

  test('a heartbeat on a channel other than 0 is 505 UNEXPECTED_FRAME, as RabbitMQ', async () => {
    const client = await RawClient.open(served.server.port);
    client.send(rawFrame(8, 1, Buffer.alloc(0)));
    await expectConnectionClose(client, 505, /^UNEXPECTED_FRAME - type 8, all octets = <<>>/);
  });
});

describe('channel exceptions', () => {
  test('a 404 closes the channel; the connection and its other channels go on', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    await client.openChannel(2);
    client.sendMethod(1, 'queue.declare', {
      reserved1: 0,
      queue: 'raw-missing',
      passive: true,
      durable: false,
      exclusive: false,
      autoDelete: false,
      nowait: false,
      arguments: {},
    });
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 404,
      replyText: "NOT_FOUND - no queue 'raw-missing' in vhost '/'",
      classId: 50,
      methodId: 10,
    });
    client.sendMethod(1, 'channel.close-ok', {});
    client.sendMethod(2, 'basic.qos', { prefetchSize: 0, prefetchCount: 5, global: false });
    await client.method('basic.qos-ok', 2);
    // The channel number is free again.
    await client.openChannel(1);
    client.destroy();
  });

  test('a body over 128 MiB is refused from its header with 406', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'basic.publish', {
      reserved1: 0,
      exchange: '',
      routingKey: 'x',
      mandatory: false,
      immediate: false,
    });
    const header = Buffer.alloc(14);
    header.writeUInt16BE(60, 0);
    header.writeBigUInt64BE(200n * 1024n * 1024n, 4);
    client.send(rawFrame(2, 1, header));
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 406,
      replyText:
        'PRECONDITION_FAILED - message size 209715200 is larger than configured max size 134217728',
    });
    client.destroy();
  });

  test("a user-id other than the connection's user is 406", async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'basic.publish', {
      reserved1: 0,
      exchange: '',
      routingKey: 'x',
      mandatory: false,
      immediate: false,
    });
    const w = new Writer();
    writeContent(w, 1, { userId: 'mallory' }, Buffer.from('x'), 131072);
    client.send(w.take());
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 406,
      replyText:
        "PRECONDITION_FAILED - user_id property set to 'mallory' but authenticated user was 'guest'",
    });
    client.destroy();
  });

  test('acking an unknown delivery tag is 406', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'basic.ack', { deliveryTag: 42, multiple: false });
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 406,
      replyText: 'PRECONDITION_FAILED - unknown delivery tag 42',
    });
    client.destroy();
  });

  test('a publish to a missing exchange is 404 on the channel', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.publish(1, 'raw-no-such-exchange', 'k', 'x');
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 404,
      replyText: "NOT_FOUND - no exchange 'raw-no-such-exchange' in vhost '/'",
      classId: 60,
      methodId: 40,
    });
    client.destroy();
  });
});

describe('transactions', () => {
  test('publishes wait for tx.commit; tx.rollback drops them', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    const queue = await served.broker.queue('raw-tx', { durable: false });
    client.sendMethod(1, 'tx.select', {});
    await client.method('tx.select-ok', 1);
    client.publish(1, '', 'raw-tx', 'kept');
    client.sendMethod(1, 'basic.qos', { prefetchSize: 0, prefetchCount: 0, global: false });
    await client.method('basic.qos-ok', 1);
    expect(queue.messageCount).toBe(0);
    client.sendMethod(1, 'tx.commit', {});
    await client.method('tx.commit-ok', 1);
    expect(queue.messageCount).toBe(1);
    client.publish(1, '', 'raw-tx', 'dropped');
    client.sendMethod(1, 'tx.rollback', {});
    await client.method('tx.rollback-ok', 1);
    client.sendMethod(1, 'tx.commit', {});
    await client.method('tx.commit-ok', 1);
    expect(queue.messageCount).toBe(1);
    client.sendMethod(1, 'confirm.select', { nowait: false });
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 406,
      replyText: 'PRECONDITION_FAILED - cannot switch from tx to confirm mode',
    });
    client.destroy();
    await queue.delete();
  });

  test('a transaction refuses a publish to a missing or internal exchange at once, not at commit', async () => {
    await served.broker.exchange('raw-tx-internal', 'fanout', { durable: false, internal: true });
    for (const [exchange, replyCode, replyText] of [
      ['raw-tx-missing', 404, "NOT_FOUND - no exchange 'raw-tx-missing' in vhost '/'"],
      [
        'raw-tx-internal',
        403,
        "ACCESS_REFUSED - cannot publish to internal exchange 'raw-tx-internal' in vhost '/'",
      ],
    ] as const) {
      const client = await RawClient.open(served.server.port);
      await client.openChannel(1);
      client.sendMethod(1, 'tx.select', {});
      await client.method('tx.select-ok', 1);
      client.publish(1, exchange, 'k', 'refused');
      const close = await client.method('channel.close', 1);
      expect(close.args).toMatchObject({ replyCode, replyText, classId: 60, methodId: 40 });
      client.destroy();
    }
    await served.broker.deleteExchange('raw-tx-internal');
  });

  test('tx.commit on a channel not in tx mode is 406', async () => {
    const client = await RawClient.open(served.server.port);
    await client.openChannel(1);
    client.sendMethod(1, 'tx.commit', {});
    const close = await client.method('channel.close', 1);
    expect(close.args).toMatchObject({
      replyCode: 406,
      replyText: 'PRECONDITION_FAILED - channel is not transactional',
    });
    client.destroy();
  });
});

describe('hostile input', () => {
  test('ten thousand channel opens: 2047 open, the next is refused with 530', async () => {
    const client = await RawClient.open(served.server.port);
    const frames: Buffer[] = [];
    for (let ch = 1; ch <= 2047; ch++) {
      frames.push(rawMethodFrame(ch, 20, 10, Buffer.from([0])));
    }
    client.send(Buffer.concat(frames));
    for (let i = 0; i < 2047; i++) await client.method('channel.open-ok');
    client.send(rawMethodFrame(2048, 20, 10, Buffer.from([0])));
    await expectConnectionClose(
      client,
      530,
      /^NOT_ALLOWED - number of channels opened \(2047\) has reached the negotiated channel_max \(2047\)$/,
    );
    await expectServerHealthy();
  });

  test('headers claiming huge bodies on many channels allocate nothing up front', async () => {
    const client = await RawClient.open(served.server.port);
    const frames: Buffer[] = [];
    const header = Buffer.alloc(14);
    header.writeUInt16BE(60, 0);
    header.writeBigUInt64BE(BigInt(128 * 1024 * 1024 - 1), 4);
    for (let ch = 1; ch <= 200; ch++) {
      frames.push(rawMethodFrame(ch, 20, 10, Buffer.from([0])));
      frames.push(
        methodFrame(ch, 'basic.publish', {
          reserved1: 0,
          exchange: '',
          routingKey: 'x',
          mandatory: false,
          immediate: false,
        }),
      );
      frames.push(rawFrame(2, ch, header));
    }
    const before = process.memoryUsage().arrayBuffers;
    client.send(Buffer.concat(frames));
    for (let i = 0; i < 200; i++) await client.method('channel.open-ok');
    await client.openChannel(201);
    client.sendMethod(201, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
    await client.method('basic.qos-ok', 201);
    // 200 bodies of 128 MiB would be 25 GiB of buffers; nothing near it was taken.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(512 * 1024 * 1024);
    client.destroy();
  });

  test('random bytes after the handshake: the server answers or closes; others are unaffected', async () => {
    const bystander = await RawClient.open(served.server.port);
    await bystander.openChannel(1);
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 2000 }), async (bytes) => {
        const client = await RawClient.open(served.server.port);
        client.send(bytes);
        // Completes any frame the bytes began: zeros then fail as a frame of type 0.
        client.send(Buffer.alloc(131072 + 16));
        await settle(client);
        bystander.sendMethod(1, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
        await bystander.method('basic.qos-ok', 1);
      }),
      { numRuns: 40 },
    );
    bystander.destroy();
    await expectServerHealthy();
  }, 120_000);

  test('random frames with valid framing: answers or closes', async () => {
    const frame = fc
      .tuple(
        fc.constantFrom(1, 2, 3, 8),
        fc.integer({ min: 0, max: 3 }),
        fc.uint8Array({ maxLength: 64 }),
      )
      .map(([type, channel, payload]) => rawFrame(type, channel, Buffer.from(payload)));
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 20 }), async (frames) => {
        const client = await RawClient.open(served.server.port);
        await client.openChannel(1);
        client.send(Buffer.concat(frames));
        await settle(client);
      }),
      { numRuns: 40 },
    );
    await expectServerHealthy();
  }, 120_000);
});
