import { describe, expect, test } from 'vitest';
import type { Message } from '../../../src/message/message.js';
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

describe.each(STORAGE_KINDS)('browsing a last-value queue on %s storage', (kind) => {
  const t = lvqPerTest(kind);

  test('a browser joining late gets the latest value of every key in queue order, then new values', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1', 'plain', 'ACME:2');
    const seen: Message[] = [];
    const browser = t.queue.browse((m) => {
      seen.push(m);
    });
    await settle();
    expect(bodies(seen)).toEqual(['INIT:1', 'plain', 'ACME:2']);
    await publishQuotes(t.queue, 'INIT:2', 'BETA:1');
    await settle();
    expect(bodies(seen)).toEqual(['INIT:1', 'plain', 'ACME:2', 'INIT:2', 'BETA:1']);
    expect(seen.every((m) => m.deliveryTag === 0 && !m.redelivered)).toBe(true);
    expect(seen[0]!.consumerTag).toBe(browser.consumerTag);
    await browser.cancel();
  });

  test('browsing removes nothing and needs no acks', async () => {
    await publishQuotes(t.queue, 'ACME:1', 'INIT:1');
    const seen: Message[] = [];
    const browser = t.queue.browse((m) => {
      seen.push(m);
    });
    await settle();
    await seen[0]!.ack();
    await seen[1]!.nack(false);
    expect(t.queue.stats()).toMatchObject({ messagesReady: 2, messagesUnacknowledged: 0 });
    await browser.cancel();
    expect(await drain(t.queue)).toEqual(['ACME:1', 'INIT:1']);
  });

  test('values replaced before a browser reached them are never shown to it', async () => {
    await publishQuotes(t.queue, 'A:1', 'B:1', 'C:1');
    const iterator = t.queue.browse()[Symbol.asyncIterator]();
    expect((await iterator.next()).value?.bodyString()).toBe('A:1');
    await publishQuotes(t.queue, 'B:2', 'C:2', 'A:2');
    const rest: string[] = [];
    for (let i = 0; i < 3; i++) rest.push((await iterator.next()).value!.bodyString());
    expect(rest).toEqual(['B:2', 'C:2', 'A:2']);
    await iterator.return!();
  });

  test('an iterating browser waits for new values and leaving the loop cancels it', async () => {
    await publishQuotes(t.queue, 'A:1');
    const seen: string[] = [];
    const loop = (async () => {
      for await (const m of t.queue.browse()) {
        seen.push(m.bodyString());
        if (seen.length === 3) break;
      }
    })();
    await settle();
    expect(seen).toEqual(['A:1']);
    await publishQuotes(t.queue, 'A:2');
    await settle();
    await publishQuotes(t.queue, 'B:1');
    await loop;
    expect(seen).toEqual(['A:1', 'A:2', 'B:1']);
    expect(t.queue.browserCount).toBe(0);
  });

  test('a browser callback that returns a promise gets the next value once it resolves', async () => {
    await publishQuotes(t.queue, 'A:1', 'B:1');
    const seen: string[] = [];
    let release!: () => void;
    t.queue.browse((m) => {
      seen.push(m.bodyString());
      return seen.length === 1 ? new Promise<void>((resolve) => (release = resolve)) : undefined;
    });
    await settle();
    expect(seen).toEqual(['A:1']);
    await publishQuotes(t.queue, 'B:2');
    release();
    await settle();
    expect(seen).toEqual(['A:1', 'B:2']);
  });

  test('many browsers share the queue and a destructive consumer still finds everything', async () => {
    await publishQuotes(t.queue, 'A:1', 'B:1', 'x');
    const browsers = Array.from({ length: 5 }, () => {
      const seen: string[] = [];
      t.queue.browse((m) => {
        seen.push(m.bodyString());
      });
      return seen;
    });
    await settle();
    await publishQuotes(t.queue, 'A:2', 'C:1');
    await settle();
    for (const seen of browsers) expect(seen).toEqual(['A:1', 'B:1', 'x', 'A:2', 'C:1']);
    expect(t.queue.browserCount).toBe(5);
    expect(await drain(t.queue)).toEqual(['B:1', 'x', 'A:2', 'C:1']);
  });

  test('a browser shows a value a consumer holds unacked, but not one it superseded', async () => {
    await publishQuotes(t.queue, 'A:1', 'B:1');
    const held = (await t.queue.get({ noAck: false }))!;
    const seen: string[] = [];
    t.queue.browse((m) => {
      seen.push(m.bodyString());
    });
    await settle();
    expect(seen).toEqual(['A:1', 'B:1']);
    await publishQuotes(t.queue, 'A:2');
    await held.ack();
    const late: string[] = [];
    t.queue.browse((m) => {
      late.push(m.bodyString());
    });
    await settle();
    expect(late).toEqual(['B:1', 'A:2']);
  });

  test('a browser keeps x-expires from deleting the queue but is not counted as a consumer', async () => {
    const clock = new ManualClock();
    const lvq = await openLvq(t.storage, {
      name: 'expiring',
      clock,
      arguments: { 'x-expires': 1000 },
    });
    const browser = lvq.browse(() => {});
    expect(lvq.consumerCount).toBe(0);
    expect(lvq.stats()).toMatchObject({ consumers: 0, browsers: 1 });
    clock.advance(5000);
    await settle();
    expect(lvq.closed).toBe(false);
    await browser.cancel();
    expect(lvq.stats().browsers).toBe(0);
    clock.advance(1000);
    await settle();
    expect(lvq.closed).toBe(true);
  });

  test('closing the queue ends its browsers', async () => {
    const iterator = t.queue.browse()[Symbol.asyncIterator]();
    const pending = iterator.next();
    await t.queue.close();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(() => t.queue.browse()).toThrow("queue 'prices' is closed");
  });
});
