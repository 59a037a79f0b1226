/**
 * Memory stays bounded whatever a client sends: methods queued behind a slow broker count in the
 * backlog that stops the socket being read, and a transaction holds at most TX_MAX_ACTIONS
 * publishes and acknowledgements until its commit.
 */

import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { AmqpChannel } from '../../src/server/channel.js';
import type { ChannelHost } from '../../src/server/channel-host.js';
import { DueConfirms } from '../../src/server/confirms.js';
import { MAX_MESSAGE_BYTES } from '../../src/server/limits.js';
import { Permissions } from '../../src/server/permissions.js';
import { ReplyAddresses } from '../../src/server/reply-to.js';
import { listen } from '../../src/server/server.js';
import { TX_MAX_ACTIONS } from '../../src/server/transaction.js';
import { Reader, Writer } from '../../src/server/wire/bytes.js';
import {
  methodFrame,
  type OutArgs,
  readArgs,
  writeContent,
  writeMethod,
} from '../../src/server/wire/methods.js';
import { type Method, type MethodName, methodById } from '../../src/server/wire/spec.js';
import { memoryStorage } from '../../src/storage/memory.js';
import type { StorageAdapter } from '../../src/storage/types.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { RawClient } from './raw-client.js';
import { servedBroker } from './served.js';

/** Memory storage whose namespaces named `slow…` open only once `release()` is called. */
function gatedStorage(): { storage: StorageAdapter; release: () => void; held: () => number } {
  const inner = memoryStorage();
  let release!: () => void;
  let held = 0;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const storage = new Proxy(inner, {
    get(target, property) {
      if (property === 'namespace') {
        return async (name: string) => {
          if (name.startsWith('slow')) {
            held++;
            await gate;
          }
          return target.namespace(name);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { storage, release, held: () => held };
}

/** A method as the connection hands it to a channel, decoded from its frame. */
function method<N extends MethodName>(name: N, args: OutArgs<N>): Method {
  const r = new Reader(methodFrame(1, name, args).subarray(7));
  return readArgs(r, methodById(r.u16(), r.u16())!);
}

/** A channel's connection that records the backlog the channel counts in it. */
function recordingHost(broker: Broker): ChannelHost & { backlogNow: number; written: Writer } {
  const written = new Writer();
  return {
    broker,
    session: broker.session(),
    permissions: Permissions.ALL,
    counts: undefined,
    user: 'guest',
    frameMax: 131072,
    maxMessageBytes: MAX_MESSAGE_BYTES,
    cancelNotify: false,
    writable: true,
    replies: new ReplyAddresses(),
    dueConfirms: new DueConfirms(),
    written,
    backlogNow: 0,
    write(build) {
      build(written);
    },
    output: () => written,
    appended() {},
    outputFailed() {},
    fail() {},
    backlog(delta) {
      this.backlogNow += delta;
    },
    released() {},
  };
}

/** The arguments of a queue.declare of `queue`. */
function declaring(queue: string, passive = false): OutArgs<'queue.declare'> {
  return {
    reserved1: 0,
    queue,
    passive,
    durable: false,
    exclusive: false,
    autoDelete: false,
    nowait: false,
    arguments: {},
  };
}

const QOS = method('basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });

/** A channel whose first method, a declare, waits for storage until `release()`. */
async function slowChannel() {
  const { storage, release } = gatedStorage();
  const broker = await Broker.open({ storage });
  const host = recordingHost(broker);
  const channel = new AmqpChannel(1, host);
  channel.onMethod(method('queue.declare', declaring('slow-queue')));
  return { broker, host, channel, release };
}

describe('flow control', () => {
  test('methods queued behind a slow declare count in the backlog that stops the reading, until they ran', async () => {
    const { broker, host, channel, release } = await slowChannel();
    try {
      for (let i = 0; i < 2000; i++) channel.onMethod(QOS);
      await new Promise((resolve) => setImmediate(resolve));
      expect(host.backlogNow).toBe(2001);
      release();
      const deadline = Date.now() + 15_000;
      while (host.backlogNow > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(host.backlogNow).toBe(0);
      await channel.teardown();
      expect(host.backlogNow).toBe(0);
    } finally {
      await broker.close();
    }
  });

  test('a channel torn down with methods still queued takes them out of the backlog', async () => {
    const { broker, host, channel, release } = await slowChannel();
    try {
      for (let i = 0; i < 10; i++) channel.onMethod(QOS);
      expect(host.backlogNow).toBe(11);
      await channel.teardown();
      expect(host.backlogNow).toBe(0);
      release();
      await new Promise((resolve) => setImmediate(resolve));
      expect(host.backlogNow).toBe(0);
    } finally {
      await broker.close();
    }
  });

  test('a peer that beats is not dropped while its socket is not read; its silence counts once reading resumes', async () => {
    const clock = new ManualClock();
    const { storage, release, held } = gatedStorage();
    await using broker = await Broker.open({ storage });
    await using server = await listen(broker, { clock, heartbeat: 10 });
    const client = await RawClient.open(server.port, { heartbeat: 10 });
    try {
      await client.openChannel(1);
      // A declare waiting for storage, and enough methods behind it to stop the reading.
      const w = new Writer();
      writeMethod(w, 1, 'queue.declare', declaring('slow-beats'));
      for (let i = 0; i < 2000; i++) {
        writeMethod(w, 1, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
      }
      client.send(w.take());
      const deadline = Date.now() + 15_000;
      while (held() === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(held()).toBe(1);
      // Three intervals pass; the client beats, but the server does not read its heartbeats.
      const heartbeat = Buffer.from([8, 0, 0, 0, 0, 0, 0, 0xce]);
      for (let i = 0; i < 6; i++) {
        client.send(heartbeat);
        await new Promise((resolve) => setImmediate(resolve));
        clock.advance(5_000);
      }
      release();
      await client.method('queue.declare-ok', 1);
      for (let i = 0; i < 2000; i++) await client.method('basic.qos-ok', 1);
      expect(client.closed).toBe(false);
      // Reading again: two silent intervals drop the peer.
      clock.advance(20_000);
      await client.waitClosed();
    } finally {
      client.destroy();
    }
  });

  describe('transactions', () => {
    const served = servedBroker();

    test('a transaction past its bound closes the channel with 406; nothing of it is published', async () => {
      const client = await RawClient.open(served.server.port);
      try {
        await client.openChannel(1);
        await (await served.broker.queue('tx-bound', { durable: false })).purge();
        client.sendMethod(1, 'tx.select', {});
        await client.method('tx.select-ok', 1);
        const w = new Writer();
        const body = Buffer.from('m');
        for (let i = 0; i <= TX_MAX_ACTIONS; i++) {
          writeMethod(w, 1, 'basic.publish', {
            reserved1: 0,
            exchange: '',
            routingKey: 'tx-bound',
            mandatory: false,
            immediate: false,
          });
          writeContent(w, 1, {}, body, 131072);
        }
        client.send(w.take());
        const close = await client.method('channel.close', 1);
        expect(close.args).toMatchObject({
          replyCode: 406,
          replyText: `PRECONDITION_FAILED - transaction holds more than ${TX_MAX_ACTIONS} publishes and acknowledgements or 134217728 bytes; commit more often`,
          classId: 60,
          methodId: 40,
        });
        client.sendMethod(1, 'channel.close-ok', {});
        // The connection goes on; the transaction's publishes were discarded.
        await client.openChannel(2);
        client.sendMethod(2, 'queue.declare', declaring('tx-bound', true));
        const ok = await client.method('queue.declare-ok', 2);
        expect(ok.args).toMatchObject({ messageCount: 0 });
      } finally {
        client.destroy();
      }
    });
  });
});
