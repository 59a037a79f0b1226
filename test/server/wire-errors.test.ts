/**
 * Connection errors as RabbitMQ 3.10 answers them, from the same raw frames sent to mqlite's
 * server and to the local RabbitMQ: the reply code and the method it names, or a socket closed
 * without connection.close (what RabbitMQ does to any error before tune-ok, after a delay, save
 * a refused login told to a client that announced `authentication_failure_close`).
 */
import { describe, expect, test } from 'vitest';
import type { FieldTable } from '../../src/message/types.js';
import { HEADER, RawClient, rawFrame, rawMethodFrame } from './raw-client.js';
import { servedBroker, wireTargets } from './served.js';

/** Each target by its port (RawClient connects to 127.0.0.1). */
const targets = wireTargets(servedBroker()).map((t) => ({
  name: t.name,
  port: () => Number(new URL(t.url()).port || 5672),
}));

type Stage = 'start' | 'tune' | 'open' | 'running';

/** Connects and goes through the handshake up to `stage` (running: with channel 1 open). */
async function reach(port: number, stage: Stage, capabilities: FieldTable): Promise<RawClient> {
  const client = await RawClient.connect(port);
  client.send(HEADER);
  await client.method('connection.start');
  if (stage === 'start') return client;
  client.sendMethod(0, 'connection.start-ok', {
    clientProperties: { capabilities },
    mechanism: 'PLAIN',
    response: '\0guest\0guest',
    locale: 'en_US',
  });
  await client.method('connection.tune');
  if (stage === 'tune') return client;
  client.sendMethod(0, 'connection.tune-ok', { channelMax: 2047, frameMax: 131072, heartbeat: 0 });
  if (stage === 'open') return client;
  client.sendMethod(0, 'connection.open', { virtualHost: '/', capabilities: '', insist: false });
  await client.method('connection.open-ok');
  await client.openChannel(1);
  return client;
}

/** What the server did: `close <code> <class>.<method>`, or `socket closed`. */
async function outcome(client: RawClient): Promise<string> {
  try {
    const close = await client.method('connection.close', 0);
    const { replyCode, classId, methodId } = close.args as Record<string, number>;
    return `close ${replyCode} ${classId}.${methodId}`;
  } catch (error) {
    if (client.closed) return 'socket closed';
    throw error;
  } finally {
    client.destroy();
  }
}

const login = (password: string, capabilities: FieldTable = {}) =>
  [
    'connection.start-ok',
    {
      clientProperties: { capabilities },
      mechanism: 'PLAIN',
      response: `\0guest\0${password}`,
      locale: 'en_US',
    },
  ] as const;
const open = { virtualHost: '/', capabilities: '', insist: false };
const heartbeat = (channel: number, payload = Buffer.alloc(0)) => rawFrame(8, channel, payload);
/** queue.declare of 'q' whose arguments table is `table`. */
const declaring = (table: number[]) =>
  rawMethodFrame(1, 50, 10, Buffer.from([0, 0, 1, 0x71, 0, ...table]));

/** A case: where the handshake stops, what is sent, and RabbitMQ's outcome. */
const cases: [string, Stage, (c: RawClient) => void, string][] = [
  [
    'tune-ok with frame-max 0',
    'tune',
    (c) => c.sendMethod(0, 'connection.tune-ok', { channelMax: 2047, frameMax: 0, heartbeat: 0 }),
    'socket closed',
  ],
  [
    'tune-ok with channel-max 0',
    'tune',
    (c) => c.sendMethod(0, 'connection.tune-ok', { channelMax: 0, frameMax: 131072, heartbeat: 0 }),
    'socket closed',
  ],
  [
    'tune-ok with frame-max below 4096',
    'tune',
    (c) =>
      c.sendMethod(0, 'connection.tune-ok', { channelMax: 2047, frameMax: 1000, heartbeat: 0 }),
    'socket closed',
  ],
  [
    "tune-ok with channel-max above the server's",
    'tune',
    (c) =>
      c.sendMethod(0, 'connection.tune-ok', { channelMax: 5000, frameMax: 131072, heartbeat: 0 }),
    'socket closed',
  ],
  [
    'a wrong password, the client announcing authentication_failure_close',
    'start',
    (c) => c.sendMethod(0, ...login('nope', { authentication_failure_close: true })),
    'close 403 0.0',
  ],
  [
    'a wrong password, without the capability',
    'start',
    (c) => c.sendMethod(0, ...login('nope')),
    'socket closed',
  ],
  [
    'connection.open in place of start-ok',
    'start',
    (c) => c.sendMethod(0, 'connection.open', open),
    'socket closed',
  ],
  [
    'connection.open in place of tune-ok',
    'tune',
    (c) => c.sendMethod(0, 'connection.open', open),
    'socket closed',
  ],
  [
    'connection.close in place of start-ok',
    'start',
    (c) =>
      c.sendMethod(0, 'connection.close', {
        replyCode: 200,
        replyText: '',
        classId: 0,
        methodId: 0,
      }),
    'socket closed',
  ],
  [
    'a truncated start-ok',
    'start',
    (c) => c.send(rawMethodFrame(0, 10, 11, Buffer.from([0, 0, 0]))),
    'socket closed',
  ],
  [
    'a method frame of 2 bytes in the handshake',
    'start',
    (c) => c.send(rawFrame(1, 0, Buffer.from([0, 10]))),
    'socket closed',
  ],
  [
    'a heartbeat on channel 1 in the handshake',
    'start',
    (c) => c.send(heartbeat(1)),
    'socket closed',
  ],
  [
    'a frame of type 9 in the handshake',
    'start',
    (c) => c.send(rawFrame(9, 0, Buffer.alloc(0))),
    'socket closed',
  ],
  [
    'a content header in the handshake',
    'start',
    (c) => c.send(rawFrame(2, 1, Buffer.alloc(14))),
    'socket closed',
  ],
  [
    'channel.open before connection.open',
    'open',
    (c) => c.sendMethod(1, 'channel.open', { outOfBand: '' }),
    'close 505 0.0',
  ],
  [
    'a heartbeat on channel 1 before connection.open',
    'open',
    (c) => c.send(heartbeat(1)),
    'close 505 0.0',
  ],
  [
    'tune-ok again before connection.open',
    'open',
    (c) =>
      c.sendMethod(0, 'connection.tune-ok', { channelMax: 2047, frameMax: 131072, heartbeat: 0 }),
    'close 504 10.31',
  ],
  [
    'an unknown vhost',
    'open',
    (c) => c.sendMethod(0, 'connection.open', { ...open, virtualHost: 'wire-conn-none' }),
    'close 530 10.40',
  ],
  [
    'start-ok on an open connection',
    'running',
    (c) => c.sendMethod(0, ...login('guest')),
    'close 504 10.11',
  ],
  [
    'tune-ok on an open connection',
    'running',
    (c) =>
      c.sendMethod(0, 'connection.tune-ok', { channelMax: 2047, frameMax: 131072, heartbeat: 0 }),
    'close 504 10.31',
  ],
  [
    'connection.open on an open connection',
    'running',
    (c) => c.sendMethod(0, 'connection.open', open),
    'close 504 10.40',
  ],
  [
    'a channel method on channel 0',
    'running',
    (c) => c.sendMethod(0, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false }),
    'close 504 60.10',
  ],
  [
    'a content header on channel 0',
    'running',
    (c) => c.send(rawFrame(2, 0, Buffer.alloc(14))),
    'close 505 0.0',
  ],
  [
    'a method frame of 2 bytes',
    'running',
    (c) => c.send(rawFrame(1, 1, Buffer.from([0, 50]))),
    'close 501 0.0',
  ],
  [
    'an empty method frame',
    'running',
    (c) => c.send(rawFrame(1, 1, Buffer.alloc(0))),
    'close 501 0.0',
  ],
  [
    'truncated queue.declare arguments',
    'running',
    (c) => c.send(rawMethodFrame(1, 50, 10, Buffer.from([0, 0, 5, 0x61]))),
    'close 501 50.10',
  ],
  [
    'truncated basic.qos arguments',
    'running',
    (c) => c.send(rawMethodFrame(1, 60, 10, Buffer.from([0, 0]))),
    'close 501 60.10',
  ],
  [
    'bytes after basic.qos arguments',
    'running',
    (c) => c.send(rawMethodFrame(1, 60, 10, Buffer.from([0, 0, 0, 0, 0, 1, 0, 9, 9]))),
    'close 501 60.10',
  ],
  [
    'a table longer than its frame',
    'running',
    (c) => c.send(declaring([0, 0, 0, 99, 1, 0x61, 0x74, 1])),
    'close 501 50.10',
  ],
  ['a heartbeat on channel 1', 'running', (c) => c.send(heartbeat(1)), 'close 505 0.0'],
  [
    'a heartbeat with a payload',
    'running',
    (c) => c.send(heartbeat(0, Buffer.from([1, 2]))),
    'close 501 0.0',
  ],
  ['a frame of type 9', 'running', (c) => c.send(rawFrame(9, 0, Buffer.alloc(0))), 'close 501 0.0'],
];

describe.each(targets)('connection errors on $name', (target) => {
  test.concurrent.each(cases)('%s', async (_, stage, send, expected) => {
    const client = await reach(target.port(), stage, { authentication_failure_close: true });
    send(client);
    expect(await outcome(client)).toBe(expected);
  });
});
