/**
 * An amqplib application's calls, run against mqlite's server and against the local RabbitMQ
 * (`AMQP_URL`, default amqp://guest:guest@127.0.0.1:5672): both must behave alike. Names are
 * unique per run and deleted afterwards. `PARITY_TARGETS=mqlite` leaves RabbitMQ out on a
 * machine without one.
 */
import { randomBytes } from 'node:crypto';
import amqplib, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { servedBroker, wireTargets } from './served.js';

const targets = wireTargets(servedBroker());

/** Waits for `count` messages a consumer collects, with a generous deadline. */
function collect(count: number): {
  messages: ConsumeMessage[];
  done: Promise<ConsumeMessage[]>;
  push: (m: ConsumeMessage | null) => void;
} {
  const messages: ConsumeMessage[] = [];
  let resolve!: (m: ConsumeMessage[]) => void;
  let reject!: (e: Error) => void;
  const done = new Promise<ConsumeMessage[]>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const timer = setTimeout(
    () => reject(new Error(`got ${messages.length} of ${count} messages`)),
    15_000,
  );
  return {
    messages,
    done,
    push(m) {
      if (!m) return;
      messages.push(m);
      if (messages.length === count) {
        clearTimeout(timer);
        resolve(messages);
      }
    },
  };
}

/** A message `get` returned, failing when the queue was empty. */
function ready(message: amqplib.GetMessage | false): amqplib.GetMessage {
  if (!message) throw new Error('the queue was empty');
  return message;
}

/** Resolves with the error a channel closes with. */
function channelError(channel: Channel): Promise<Error & { code?: number }> {
  return new Promise((resolve) => channel.once('error', resolve));
}

describe.each(targets)('amqplib against $name', (target) => {
  let connection: ChannelModel;
  const names: string[] = [];
  const exchanges: string[] = [];
  const name = (label: string) => {
    const n = `mqlite-amqplib-${label}-${randomBytes(4).toString('hex')}`;
    names.push(n);
    return n;
  };

  beforeAll(async () => {
    connection = await amqplib.connect(target.url());
  });
  afterAll(async () => {
    const cleanup = await connection.createChannel();
    for (const q of names) await cleanup.deleteQueue(q);
    for (const e of exchanges) await cleanup.deleteExchange(e);
    await connection.close();
  });

  test('a confirm channel: sendToQueue, waitForConfirms, checkQueue().messageCount', async () => {
    const ch = await connection.createConfirmChannel();
    const q = name('confirm');
    await ch.assertQueue(q, { durable: false });
    const acked: number[] = [];
    for (let i = 0; i < 20; i++) {
      ch.sendToQueue(q, Buffer.from(`m${i}`), {}, (err) => {
        if (!err) acked.push(i);
      });
    }
    await ch.waitForConfirms();
    expect(acked).toHaveLength(20);
    expect((await ch.checkQueue(q)).messageCount).toBe(20);
    await ch.close();
  });

  test('assertQueue with maxPriority and deadLetterExchange; nack(msg, false, false) dead-letters', async () => {
    const ch = await connection.createConfirmChannel();
    const dlx = `${name('dlx')}-x`;
    exchanges.push(dlx);
    const q = name('jobs');
    const dead = name('dead');
    await ch.assertExchange(dlx, 'fanout', { durable: false });
    const declared = await ch.assertQueue(q, {
      durable: false,
      maxPriority: 9,
      deadLetterExchange: dlx,
    });
    expect(declared).toEqual({ queue: q, messageCount: 0, consumerCount: 0 });
    await ch.assertQueue(dead, { durable: false });
    await ch.bindQueue(dead, dlx, '');
    for (const priority of [1, 5, 9]) {
      ch.sendToQueue(q, Buffer.from(`p${priority}`), { priority, headers: { n: priority } });
    }
    await ch.waitForConfirms();
    const got = collect(3);
    await ch.prefetch(10);
    await ch.consume(q, got.push);
    const messages = await got.done;
    expect(messages.map((m) => m.content.toString())).toEqual(['p9', 'p5', 'p1']);
    ch.nack(messages[0]!, false, false);
    ch.ack(messages[1]!);
    ch.ack(messages[2]!);
    let deadMessage: amqplib.GetMessage | false = false;
    for (const end = Date.now() + 15_000; !deadMessage && Date.now() < end; ) {
      deadMessage = await ch.get(dead, { noAck: true });
      if (!deadMessage) await new Promise((r) => setTimeout(r, 10));
    }
    expect(ready(deadMessage).content.toString()).toBe('p9');
    const death = ready(deadMessage).properties.headers?.['x-death'];
    expect(death?.[0]).toMatchObject({ queue: q, reason: 'rejected', count: 1 });
    await ch.close();
  });

  test('prefetch limits unacknowledged deliveries', async () => {
    const ch = await connection.createChannel();
    const q = name('prefetch');
    await ch.assertQueue(q, { durable: false });
    for (let i = 0; i < 5; i++) ch.sendToQueue(q, Buffer.from(`m${i}`));
    await ch.prefetch(2);
    const got = collect(2);
    await ch.consume(q, got.push);
    const two = await got.done;
    // Nothing more arrives while two are unacked: the other three are still ready.
    expect((await ch.checkQueue(q)).messageCount).toBe(3);
    expect(got.messages).toHaveLength(2);
    const rest = collect(5);
    for (const m of two) rest.push(m);
    ch.ack(two[1]!, true);
    // Each ack frees room for one more: three more arrive in all.
    const all = await new Promise<ConsumeMessage[]>((resolve, reject) => {
      const poll = setInterval(() => {
        for (const m of got.messages.slice(rest.messages.length)) {
          rest.push(m);
          ch.ack(m);
        }
        if (rest.messages.length >= 5) {
          clearInterval(poll);
          resolve(rest.messages);
        }
      }, 5);
      rest.done.catch((e: Error) => {
        clearInterval(poll);
        reject(e);
      });
    });
    expect(all.map((m) => m.content.toString())).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    await ch.close();
  });

  test('a global prefetch is shared by the consumers of a channel', async () => {
    const ch = await connection.createChannel();
    const [a, b] = [name('global-a'), name('global-b')];
    for (const q of [a, b]) {
      await ch.assertQueue(q, { durable: false });
      for (let i = 0; i < 3; i++) ch.sendToQueue(q, Buffer.from(`${q}-${i}`));
    }
    await ch.checkQueue(b);
    await ch.prefetch(2, true);
    const got = collect(2);
    await ch.consume(a, got.push);
    await ch.consume(b, got.push);
    await got.done;
    const ready = (await ch.checkQueue(a)).messageCount + (await ch.checkQueue(b)).messageCount;
    expect(ready).toBe(4);
    await ch.close();
  });

  test('recover returns the unacked deliveries, redelivered', async () => {
    const ch = await connection.createChannel();
    const q = name('recover');
    await ch.assertQueue(q, { durable: false });
    ch.sendToQueue(q, Buffer.from('again'));
    const got = collect(2);
    await ch.consume(q, got.push);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (got.messages.length >= 1) {
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    await ch.recover();
    const [first, second] = await got.done;
    expect(first!.fields.redelivered).toBe(false);
    expect(second!.fields.redelivered).toBe(true);
    expect(second!.content.toString()).toBe('again');
    await ch.close();
  });

  test('get: get-ok with messageCount, get-empty, ack of a get', async () => {
    const ch = await connection.createChannel();
    const q = name('get');
    await ch.assertQueue(q, { durable: false });
    ch.sendToQueue(q, Buffer.from('a'), { messageId: 'id-1', contentType: 'text/plain' });
    ch.sendToQueue(q, Buffer.from('b'));
    await ch.checkQueue(q);
    const a = await ch.get(q);
    expect(ready(a).content.toString()).toBe('a');
    expect(ready(a).fields.messageCount).toBe(1);
    expect(ready(a).properties.messageId).toBe('id-1');
    expect(ready(a).properties.contentType).toBe('text/plain');
    ch.ack(a as amqplib.GetMessage);
    const b = await ch.get(q, { noAck: true });
    expect(ready(b).content.toString()).toBe('b');
    expect(await ch.get(q)).toBe(false);
    await ch.close();
  });

  test('a mandatory unroutable publish comes back as basic.return with 312 NO_ROUTE', async () => {
    const ch = await connection.createConfirmChannel();
    const returned = new Promise<amqplib.Message>((resolve) => ch.once('return', resolve));
    ch.publish('amq.direct', name('nowhere'), Buffer.from('lost'), { mandatory: true });
    const message = await returned;
    expect(message.fields).toMatchObject({ replyCode: 312, replyText: 'NO_ROUTE' });
    expect(message.content.toString()).toBe('lost');
    await ch.waitForConfirms();
    await ch.close();
  });

  test('checkQueue of a missing queue closes the channel with 404; the connection goes on', async () => {
    const ch = await connection.createChannel();
    const error = channelError(ch);
    await expect(ch.checkQueue(name('missing'))).rejects.toThrow(/404/);
    expect((await error).message).toMatch(/NOT_FOUND - no queue '.*' in vhost '\/'/);
    const next = await connection.createChannel();
    await next.assertQueue(name('after'), { durable: false });
    await next.close();
  });

  test('a redeclare with other arguments is 406 PRECONDITION_FAILED', async () => {
    const ch = await connection.createChannel();
    const q = name('inequivalent');
    await ch.assertQueue(q, { durable: false, maxPriority: 3 });
    const error = channelError(ch);
    await expect(ch.assertQueue(q, { durable: false, maxPriority: 4 })).rejects.toThrow(/406/);
    expect((await error).message).toMatch(
      /PRECONDITION_FAILED - inequivalent arg 'x-max-priority'/,
    );
  });

  test('an exclusive queue is locked to its connection (405)', async () => {
    const ch = await connection.createChannel();
    const q = name('exclusive');
    await ch.assertQueue(q, { exclusive: true });
    const other = await amqplib.connect(target.url());
    const otherCh = await other.createChannel();
    const error = channelError(otherCh);
    await expect(otherCh.checkQueue(q)).rejects.toThrow(/405/);
    expect((await error).message).toMatch(/RESOURCE_LOCKED - cannot obtain exclusive access/);
    await other.close();
    await ch.close();
  });

  test('an auto-delete queue goes with its last consumer', async () => {
    const ch = await connection.createChannel();
    const q = name('auto');
    await ch.assertQueue(q, { durable: false, autoDelete: true });
    const { consumerTag } = await ch.consume(q, () => {});
    await ch.cancel(consumerTag);
    const probe = await connection.createChannel();
    const error = channelError(probe);
    let gone = false;
    for (const end = Date.now() + 15_000; !gone && Date.now() < end; ) {
      gone = await probe.checkQueue(q).then(
        () => false,
        () => true,
      );
      if (!gone) await new Promise((r) => setTimeout(r, 10));
    }
    expect((await error).message).toMatch(/NOT_FOUND/);
    await ch.close();
  });

  test('an exclusive consumer locks the queue for others (403)', async () => {
    const ch = await connection.createChannel();
    const q = name('exclusive-consumer');
    await ch.assertQueue(q, { durable: false });
    await ch.consume(q, () => {}, { exclusive: true });
    const other = await connection.createChannel();
    const error = channelError(other);
    await expect(other.consume(q, () => {})).rejects.toThrow(/403/);
    expect((await error).message).toMatch(
      /ACCESS_REFUSED - queue '.*' in vhost '\/' in exclusive use/,
    );
    await ch.close();
  });

  test('a server-named queue', async () => {
    const ch = await connection.createChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    expect(queue).toMatch(/^amq\.gen-/);
    await ch.close();
  });

  test('deleting a consumed queue cancels its consumer (the callback gets null)', async () => {
    const ch = await connection.createChannel();
    const q = name('cancelled');
    await ch.assertQueue(q, { durable: false });
    const cancelled = new Promise<null>((resolve) =>
      ch.consume(q, (m) => {
        if (m === null) resolve(null);
      }),
    );
    const admin = await connection.createChannel();
    await admin.deleteQueue(q);
    expect(await cancelled).toBeNull();
    await admin.close();
    await ch.close();
  });

  test('headers keep their values and kinds', async () => {
    const ch = await connection.createChannel();
    const q = name('headers');
    await ch.assertQueue(q, { durable: false });
    const headers = {
      int: 42,
      negative: -7,
      long: 2 ** 40,
      float: 1.5,
      text: 'hello',
      flag: true,
      nested: { a: 1, b: 'two' },
      list: [1, 'x', false],
    };
    ch.sendToQueue(q, Buffer.from('h'), { headers, timestamp: 1_700_000_000, priority: 3 });
    await ch.checkQueue(q);
    const m = await ch.get(q, { noAck: true });
    expect(ready(m).properties.headers).toMatchObject(headers);
    expect(ready(m).properties.timestamp).toBe(1_700_000_000);
    expect(ready(m).properties.priority).toBe(3);
    await ch.close();
  });

  test('direct reply-to: an RPC round trip through amq.rabbitmq.reply-to', async () => {
    const serverCh = await connection.createChannel();
    const rpc = name('rpc');
    await serverCh.assertQueue(rpc, { durable: false });
    await serverCh.consume(rpc, (m) => {
      if (!m) return;
      serverCh.sendToQueue(m.properties.replyTo, Buffer.from(`re: ${m.content}`), {
        correlationId: m.properties.correlationId,
      });
      serverCh.ack(m);
    });
    const other = await amqplib.connect(target.url());
    const client = await other.createChannel();
    let answered!: (m: ConsumeMessage) => void;
    const reply = new Promise<ConsumeMessage>((resolve) => {
      answered = resolve;
    });
    await client.consume('amq.rabbitmq.reply-to', (m) => m && answered(m), { noAck: true });
    client.sendToQueue(rpc, Buffer.from('ping'), {
      replyTo: 'amq.rabbitmq.reply-to',
      correlationId: 'c-1',
    });
    const answer = await reply;
    expect(answer.content.toString()).toBe('re: ping');
    expect(answer.properties.correlationId).toBe('c-1');
    expect(answer.fields.routingKey).toMatch(/^amq\.rabbitmq\.reply-to\./);
    await other.close();
    await serverCh.close();
  });

  test('a request with reply-to but no reply consumer is 406', async () => {
    const ch = await connection.createChannel();
    const error = channelError(ch);
    ch.sendToQueue(name('rpc-none'), Buffer.from('x'), { replyTo: 'amq.rabbitmq.reply-to' });
    expect((await error).message).toMatch(
      /PRECONDITION_FAILED - fast reply consumer does not exist/,
    );
  });

  test('multiple acks are scoped to the channel', async () => {
    const ch = await connection.createChannel();
    const q = name('multiple');
    await ch.assertQueue(q, { durable: false });
    for (let i = 0; i < 4; i++) ch.sendToQueue(q, Buffer.from(`m${i}`));
    const got = collect(5);
    await ch.consume(q, got.push);
    await new Promise<void>((resolve) => {
      const poll = setInterval(() => {
        if (got.messages.length >= 4) {
          clearInterval(poll);
          resolve();
        }
      }, 5);
    });
    const messages = got.messages;
    ch.ack(messages[2]!, true); // settles m0, m1 and m2
    ch.nack(messages[3]!, false, true); // m3 requeued, delivered again
    const redelivered = (await got.done)[4]!;
    expect(redelivered.fields.redelivered).toBe(true);
    expect(redelivered.content.toString()).toBe('m3');
    await ch.close();
  });

  test('a multiple ack settles the deliveries of every consumer of the channel up to its tag', async () => {
    const ch = await connection.createChannel();
    const [a, b] = [name('multi-a'), name('multi-b')];
    for (const q of [a, b]) {
      await ch.assertQueue(q, { durable: false });
      await ch.purgeQueue(q);
    }
    const got = collect(6);
    // Tags 1-2 from a, 3-4 from b, then 5 from a and 6 from b.
    ch.sendToQueue(a, Buffer.from('a1'));
    ch.sendToQueue(a, Buffer.from('a2'));
    await ch.consume(a, got.push);
    while (got.messages.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    ch.sendToQueue(b, Buffer.from('b1'));
    ch.sendToQueue(b, Buffer.from('b2'));
    await ch.consume(b, got.push);
    while (got.messages.length < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    ch.sendToQueue(a, Buffer.from('a3'));
    while (got.messages.length < 5) await new Promise((resolve) => setTimeout(resolve, 5));
    ch.sendToQueue(b, Buffer.from('b3'));
    const messages = await got.done;
    expect(messages.map((m) => m.content.toString())).toEqual(['a1', 'a2', 'b1', 'b2', 'a3', 'b3']);
    ch.ack(messages[3]!, true);
    await ch.close();
    // Closing the channel returned what the ack left: a3 and b3.
    const check = await connection.createChannel();
    expect((await check.checkQueue(a)).messageCount).toBe(1);
    expect((await check.checkQueue(b)).messageCount).toBe(1);
    expect(ready(await check.get(a)).content.toString()).toBe('a3');
    expect(ready(await check.get(b)).content.toString()).toBe('b3');
    for (const q of [a, b]) await check.deleteQueue(q);
    await check.close();
  });

  test('a body larger than frame-max arrives whole, in frames of frame-max', async () => {
    const ch = await connection.createChannel();
    const q = name('large');
    await ch.assertQueue(q, { durable: false });
    const body = randomBytes(300_000);
    ch.sendToQueue(q, body, { contentType: 'application/octet-stream', headers: { n: 1 } });
    const got = collect(1);
    await ch.consume(q, got.push, { noAck: true });
    const [message] = await got.done;
    expect(Buffer.compare(message!.content, body)).toBe(0);
    expect(message!.properties.contentType).toBe('application/octet-stream');
    expect(message!.properties.headers).toEqual({ n: 1 });
    await ch.deleteQueue(q);
    await ch.close();
  });
});
