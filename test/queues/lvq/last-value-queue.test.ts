import { describe, expect, test } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import { LastValueQueue } from '../../../src/queues/lvq/last-value-queue.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';
import {
  bodies,
  drain,
  lvqPerTest,
  openLvq,
  publishQuotes,
  STORAGE_KINDS,
  settle,
} from './support.js';

describe.each(STORAGE_KINDS)('a last-value queue on %s storage', (kind) => {
  const t = lvqPerTest(kind);

  test('publishing keys 1 2 3 4 2 1 leaves 3 4 2 1, each with its latest value', async () => {
    await publishQuotes(t.queue, '1:a', '2:a', '3:a', '4:a', '2:b', '1:b');
    expect(t.queue.messageCount).toBe(4);
    expect(await drain(t.queue)).toEqual(['3:a', '4:a', '2:b', '1:b']);
  });

  test('keys compare by type: the string "3" and the number 3 are different keys', async () => {
    await t.queue.publish('string', { headers: { symbol: '3' } });
    await t.queue.publish('number', { headers: { symbol: 3 } });
    await t.queue.publish('number again', { headers: { symbol: 3 } });
    await t.queue.publish('object', { headers: { symbol: { isin: 'US1', venue: 'X' } } });
    await t.queue.publish('object again', { headers: { symbol: { venue: 'X', isin: 'US1' } } });
    expect(await drain(t.queue)).toEqual(['string', 'number again', 'object again']);
  });

  test('messages without the key header are never replaced and never replace', async () => {
    await publishQuotes(t.queue, 'plain 1', 'ACME:1', 'plain 2', 'ACME:2', 'plain 3');
    expect(t.queue.messageCount).toBe(4);
    expect(await drain(t.queue)).toEqual(['plain 1', 'plain 2', 'ACME:2', 'plain 3']);
  });

  test('the key header defaults to qpid.LVQ_key', async () => {
    const other = await LastValueQueue.open({ name: 'default-key', storage: t.storage.storage });
    expect(other.key).toBe('qpid.LVQ_key');
    await other.publish('a', { headers: { 'qpid.LVQ_key': 'k' } });
    await other.publish('b', { headers: { 'qpid.LVQ_key': 'k' } });
    expect(other.messageCount).toBe(1);
    await other.close();
  });

  test('x-max-priority is ignored: delivery stays in queue order', async () => {
    const lvq = await openLvq(t.storage, { name: 'no-prio', arguments: { 'x-max-priority': 9 } });
    await lvq.publish('low', { priority: 0, headers: { symbol: 'A' } });
    await lvq.publish('high', { priority: 9, headers: { symbol: 'B' } });
    expect(lvq.arguments).not.toHaveProperty('maxPriority');
    expect(await drain(lvq)).toEqual(['low', 'high']);
    await lvq.close();
  });

  test('refuses a key option that contradicts the arguments, and qpid.last_value_queue: false', async () => {
    await expect(
      openLvq(t.storage, { arguments: { 'qpid.last_value_queue_key': 'isin' } }),
    ).rejects.toThrow("key 'symbol' differs from qpid.last_value_queue_key 'isin'");
    await expect(
      LastValueQueue.open({
        name: 'off',
        storage: t.storage.storage,
        arguments: { 'qpid.last_value_queue': false },
      }),
    ).rejects.toThrow("invalid arg 'qpid.last_value_queue' for queue 'off'");
  });

  test('an unacked delivery is not replaced; acked, only the newer value remains', async () => {
    await publishQuotes(t.queue, 'ACME:1');
    const held = (await t.queue.get({ noAck: false }))!;
    await publishQuotes(t.queue, 'ACME:2');
    expect(t.queue.stats()).toMatchObject({ messagesReady: 1, messagesUnacknowledged: 1 });
    await held.ack();
    expect(t.queue.stats()).toMatchObject({ messagesReady: 1, messagesUnacknowledged: 0 });
    expect(await drain(t.queue)).toEqual(['ACME:2']);
  });

  test('a released value is discarded when a newer one exists, never redelivered', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1');
    const acme = (await t.queue.get({ noAck: false }))!;
    await publishQuotes(t.queue, 'ACME:2');
    await acme.nack(true);
    expect(t.queue.stats()).toMatchObject({ messagesReady: 2, messagesUnacknowledged: 0 });
    expect(await drain(t.queue)).toEqual(['INIT:1', 'ACME:2']);
  });

  test('a released value that is still the latest is requeued at its place, redelivered', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1');
    const acme = (await t.queue.get({ noAck: false }))!;
    await publishQuotes(t.queue, 'BETA:1');
    await acme.nack(true);
    const again = (await t.queue.get({ noAck: true }))!;
    expect(again.bodyString()).toBe('ACME:1');
    expect(again.redelivered).toBe(true);
    expect(await drain(t.queue)).toEqual(['INIT:1', 'BETA:1']);
  });

  test('a consumer going away returns only the values that are still the latest', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1', 'plain');
    const seen: Message[] = [];
    const sub = await t.queue.subscribe({ manualAck: true }, (m) => {
      seen.push(m);
    });
    expect(bodies(seen)).toEqual(['ACME:1', 'INIT:1', 'plain']);
    await publishQuotes(t.queue, 'ACME:2');
    await sub.close();
    await settle();
    expect(await drain(t.queue)).toEqual(['INIT:1', 'plain', 'ACME:2']);
  });

  test('depth counts live keys plus keyless messages', async () => {
    await publishQuotes(t.queue, 'A:1', 'B:1', 'A:2', 'x', 'B:2', 'y', 'C:1');
    expect(t.queue.messageCount).toBe(5);
    expect(t.queue.keyCount).toBe(3);
  });

  test('prefetch 1 gives exact last-value semantics', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1');
    const seen: Message[] = [];
    await t.queue.subscribe({ prefetch: 1, manualAck: true }, (m) => {
      seen.push(m);
    });
    await publishQuotes(t.queue, 'ACME:2', 'INIT:2', 'INIT:3');
    while (seen.length < 10) {
      const last = seen.at(-1)!;
      await last.ack();
      if (seen.at(-1) === last) break;
    }
    expect(bodies(seen)).toEqual(['ACME:1', 'ACME:2', 'INIT:3']);
  });

  test('a large prefetch delivers what was in its window even if newer values arrive', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1');
    const seen: Message[] = [];
    await t.queue.subscribe({ prefetch: 100, manualAck: true }, (m) => {
      seen.push(m);
    });
    await publishQuotes(t.queue, 'ACME:2', 'INIT:2', 'INIT:3');
    expect(bodies(seen)).toEqual(['ACME:1', 'INIT:1', 'ACME:2', 'INIT:2', 'INIT:3']);
    await Promise.all(seen.map((m) => m.ack()));
    expect(t.queue.stats().messages).toBe(0);
  });

  test('latest(key) and values() read the current values without consuming', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'plain', 'INIT:1', 'ACME:2');
    expect(t.queue.latest('ACME')?.bodyString()).toBe('ACME:2');
    expect(t.queue.latest('NONE')).toBeUndefined();
    expect(t.queue.latest(null)).toBeUndefined();
    expect(bodies([...t.queue.values()])).toEqual(['plain', 'INIT:1', 'ACME:2']);
    expect(t.queue.messageCount).toBe(3);
  });

  test('x-max-length drops the oldest value', async () => {
    const limited = await openLvq(t.storage, {
      name: 'limited',
      arguments: { 'x-max-length': 2 },
    });
    await publishQuotes(limited, 'A:1', 'B:1', 'A:2', 'C:1');
    expect(limited.messageCount).toBe(2);
    expect(await drain(limited)).toEqual(['A:2', 'C:1']);
    await limited.close();
  });

  test('a replaced value expiring takes nothing with it; its successor expires on its own', async () => {
    const clock = new ManualClock();
    const ttl = await openLvq(t.storage, {
      name: 'ttl',
      clock,
      arguments: { 'x-message-ttl': 1000 },
    });
    await publishQuotes(ttl, 'A:1', 'B:1');
    clock.advance(600);
    await publishQuotes(ttl, 'A:2');
    clock.advance(600);
    expect(ttl.latest('A')?.bodyString()).toBe('A:2');
    expect(ttl.latest('B')).toBeUndefined();
    clock.advance(600);
    expect(ttl.messageCount).toBe(0);
    await ttl.close();
  });
});
