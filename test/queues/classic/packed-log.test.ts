import { describe, expect, it } from 'vitest';
import { normalizeMessage } from '../../../src/message/normalize.js';
import { PAGE_SIZE, PackedLog, pageCodec } from '../../../src/queues/classic/packed-log.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import type { Namespace } from '../../../src/storage/types.js';

const text = new TextDecoder();

async function namespace(): Promise<Namespace> {
  return memoryStorage().namespace('q');
}

async function open(ns: Namespace, name: string): Promise<PackedLog> {
  return new PackedLog(await ns.openLog(name, pageCodec));
}

/** Bodies of the live messages from `offset` on, in order. */
function bodies(log: PackedLog, offset = 1): string[] {
  const out: string[] = [];
  const cursor = log.cursor(offset);
  while (cursor.next()) out.push(text.decode(cursor.record.body));
  return out;
}

describe('a packed level log', () => {
  it('gives back each message as published, with gapless offsets across pages', async () => {
    const log = await open(await namespace(), 'prio.000');
    const message = normalizeMessage(
      'hello',
      { priority: 3, messageId: 'm1', headers: { a: 1 } },
      'ex',
      'rk',
    );
    expect(log.append(message, 1234)).toBe(1);
    for (let i = 2; i <= PAGE_SIZE + 5; i++) expect(log.append(message, i)).toBe(i);
    expect(log.nextOffset).toBe(PAGE_SIZE + 6);
    expect(log.count).toBe(PAGE_SIZE + 5);
    const read = log.get(1)!;
    expect([read.exchange, read.routingKey, read.properties]).toEqual([
      'ex',
      'rk',
      message.properties,
    ]);
    expect(text.decode(read.body)).toBe('hello');
    expect(log.timestampOf(1)).toBe(1234);
    expect(log.get(PAGE_SIZE + 6)).toBeUndefined();
    expect(log.timestampOf(PAGE_SIZE + 6)).toBeNaN();
  });

  it('shares the properties of messages that carry only a priority', async () => {
    const log = await open(await namespace(), 'prio.005');
    log.append(normalizeMessage('a', { priority: 5 }, '', 'q'), 0);
    log.append(normalizeMessage('b', { priority: 5 }, '', 'q'), 0);
    log.append(normalizeMessage('c', { priority: 5, type: 't' }, '', 'q'), 0);
    expect(log.get(1)!.properties).toBe(log.get(2)!.properties);
    expect(log.get(1)!.properties).toEqual({ priority: 5 });
    expect(log.get(3)!.properties).toEqual({ priority: 5, type: 't' });
  });

  it("keeps each message's own route and properties where consecutive ones differ", async () => {
    const log = await open(await namespace(), 'prio.000');
    const shared = { priority: 1, headers: { h: 1 } };
    const sent = [
      normalizeMessage('a', shared, 'ex1', 'k1'),
      normalizeMessage('b', shared, 'ex1', 'k1'),
      normalizeMessage('c', shared, 'ex1', 'k2'),
      normalizeMessage('d', shared, 'ex2', 'k2'),
      normalizeMessage('e', { priority: 1, type: 't' }, 'ex2', 'k2'),
      normalizeMessage('f', shared, 'ex1', 'k1'),
    ];
    for (const message of sent) log.append(message, 0);
    sent.forEach((message, i) => {
      const read = log.get(i + 1)!;
      expect([text.decode(read.body), read.exchange, read.routingKey]).toEqual([
        text.decode(message.body),
        message.exchange,
        message.routingKey,
      ]);
      expect(read.properties).toEqual(message.properties);
    });
  });

  it('reads every message back across the chunks that pages are carved from', async () => {
    const log = await open(await namespace(), 'prio.000');
    // Chunks of 1, 2, 4, … 32 pages: the 64th page starts another chunk.
    const n = 64 * PAGE_SIZE + 3;
    const messages = [0, 1, 2].map((k) => normalizeMessage(`m${k}`, undefined, '', `k${k}`));
    for (let i = 1; i <= n; i++) log.append(messages[i % 3]!, i);
    for (let i = 1; i <= n; i += 997) {
      const read = log.get(i)!;
      expect([text.decode(read.body), read.routingKey, log.timestampOf(i)]).toEqual([
        `m${i % 3}`,
        `k${i % 3}`,
        i,
      ]);
    }
    let seen = 0;
    const cursor = log.cursor(1);
    while (cursor.next()) expect(cursor.offset).toBe(++seen);
    expect(seen).toBe(n);
  });

  it('skips deleted messages and releases a page once all of its messages are deleted', async () => {
    const ns = await namespace();
    const log = await open(ns, 'prio.000');
    const n = 2 * PAGE_SIZE + 10;
    for (let i = 1; i <= n; i++) log.append(normalizeMessage(String(i), undefined, '', 'q'), i);
    for (let i = 1; i <= PAGE_SIZE + 1; i++) log.markDeleted(i);
    log.markDeleted(PAGE_SIZE + 3);
    expect(log.isDeleted(PAGE_SIZE + 3)).toBe(true);
    expect(log.count).toBe(n - PAGE_SIZE - 2);
    // The first page went; offsets in it read as gone.
    expect(log.firstOffset).toBe(PAGE_SIZE + 1);
    expect(log.get(1)).toBeUndefined();
    expect(log.timestampOf(1)).toBeNaN();
    expect(bodies(log).slice(0, 2)).toEqual([String(PAGE_SIZE + 2), String(PAGE_SIZE + 4)]);
    expect(bodies(log, n)).toEqual([String(n)]);
  });

  it('is found again by a log reopened on the same memory storage', async () => {
    const ns = await namespace();
    const first = await open(ns, 'prio.001');
    for (let i = 1; i <= PAGE_SIZE + 2; i++) {
      first.append(normalizeMessage(`m${i}`, undefined, '', 'q'), i);
    }
    first.markDeleted(2);
    await first.close();
    const again = await open(ns, 'prio.001');
    expect(again.count).toBe(PAGE_SIZE + 1);
    expect(again.nextOffset).toBe(PAGE_SIZE + 3);
    expect(bodies(again).slice(0, 2)).toEqual(['m1', 'm3']);
    expect(again.append(normalizeMessage('next', undefined, '', 'q'), 0)).toBe(PAGE_SIZE + 3);
    expect(again.get(PAGE_SIZE + 3)!.routingKey).toBe('q');
  });

  it('truncates everything, and offsets keep counting', async () => {
    const log = await open(await namespace(), 'prio.000');
    for (let i = 0; i < 3; i++) log.append(normalizeMessage('x', undefined, '', 'q'), 0);
    const cursor = log.cursor(1);
    log.truncate();
    expect(log.count).toBe(0);
    expect(cursor.next()).toBe(false);
    const offset = log.append(normalizeMessage('after', undefined, '', 'q'), 0);
    expect(offset).toBeGreaterThan(3);
    expect(log.firstOffset).toBe(offset);
    expect(cursor.next()).toBe(true);
    expect(text.decode(cursor.record.body)).toBe('after');
  });
});
