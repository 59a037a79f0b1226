import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import { openStream, publishMany, STORAGE_KINDS, settle, TestStorage } from './support.js';

describe('a stream without storage options', () => {
  it('lives in a private memory storage and takes a bare callback', async () => {
    await using stream = await StreamQueue.open({ name: 'solo' });
    const seen: Message[] = [];
    await stream.subscribe((m) => {
      seen.push(m);
    });
    await stream.publish({ hello: 'world' });
    await settle();
    expect(seen.map((m) => m.json())).toEqual([{ hello: 'world' }]);
  });
});

describe.each(STORAGE_KINDS)('stream lifecycle on %s storage', (kind) => {
  let storage: TestStorage;

  beforeEach(() => {
    storage = new TestStorage(kind);
  });
  afterEach(() => storage.dispose());

  it('refuses consumeOne() like get(), with 540', async () => {
    const stream = await openStream(storage);
    await expect(stream.consumeOne({ timeout: 10 })).rejects.toMatchObject({ replyCode: 540 });
    await stream.close();
  });

  it('closes idempotently; later calls reject with MQLITE_CLOSED', async () => {
    const stream = await openStream(storage);
    const sub = await stream.subscribe({ tag: 'c' }, () => {});
    await stream.close();
    await stream.close();
    expect(stream.closed).toBe(true);
    expect(sub.active).toBe(false);
    await expect(stream.publish('x')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await expect(stream.subscribe({}, () => {})).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    await expect(stream.purge()).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    expect(() => stream.storedOffset('c')).toThrow(
      expect.objectContaining({ code: 'MQLITE_CLOSED' }),
    );
  });

  it('deletes its messages and stored offsets, reporting how many messages it held', async () => {
    const deleted: string[] = [];
    const stream = await openStream(storage, { onDelete: (name) => deleted.push(name) });
    await publishMany(stream, 3);
    const sub = await stream.subscribe({ tag: 'w' }, () => {});
    await settle();
    expect(await stream.delete()).toBe(3);
    expect(sub.active).toBe(false);
    expect(deleted).toEqual(['events']);
    expect(await storage.storage.listNamespaces()).toEqual([]);
    const fresh = await openStream(storage);
    expect(fresh.nextOffset).toBe(1);
    expect(fresh.storedOffset('w')).toBeUndefined();
    await fresh.close();
  });

  it('rejects a publish whose properties are invalid, storing nothing', async () => {
    const stream = await openStream(storage);
    await expect(stream.publish('x', { priority: 300 })).rejects.toMatchObject({ replyCode: 406 });
    expect(stream.nextOffset).toBe(1);
    await stream.close();
  });
});
