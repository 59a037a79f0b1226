/**
 * A full disk and failing writes: typed errors naming the file, and a log that works on once a
 * write succeeds again, never losing or repeating a confirmed record.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { StorageError } from '../../src/errors.js';
import { type FsStorageOptions, fsStorage } from '../../src/storage/fs/index.js';
import type { Log, StorageAdapter } from '../../src/storage/types.js';
import { faultyIo, testRecordCodec } from '../../src/testing/index.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-full-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => path.join(root, `t${++n}`);
const open = (dir: string, options: Partial<FsStorageOptions> = {}) =>
  fsStorage({ dir, fsync: 'always', ...options });

async function openLog(adapter: StorageAdapter): Promise<Log<string>> {
  return (await adapter.namespace('q')).openLog('log', testRecordCodec, {});
}

function readAll(log: Log<string>): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  const c = log.cursor();
  while (c.next()) out.push([c.offset, c.record]);
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('resolved'),
    (error: unknown) => error,
  );
}

describe('fs storage: a full disk', () => {
  test('a write that fails is a StorageError naming the file, with the cause', async () => {
    const faults = faultyIo();
    const adapter = open(freshDir(), { io: faults.io });
    const log = await openLog(adapter);
    log.append('confirmed', 1);
    await log.sync();
    faults.failWritesAfter(5, 'ENOSPC');
    log.append('refused', 2);
    const error = await rejection(log.sync());
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({
      code: 'MQLITE_STORAGE',
      replyCode: 541,
      ioCode: 'ENOSPC',
      file: expect.stringMatching(/0000000001\.seg$/),
      cause: expect.objectContaining({ code: 'ENOSPC' }),
      message: expect.stringMatching(/^INTERNAL_ERROR - write '.*0000000001\.seg' failed: ENOSPC$/),
    });
    // Still full: the next append tries again and is refused the same way, taking no offset.
    expect(() => log.append('still refused', 3)).toThrow(StorageError);
    expect(log.nextOffset).toBe(3);
    faults.heal();
    await adapter.close();
  });

  test('once space is back the log works on; nothing confirmed is lost or repeated', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const log = await openLog(adapter);
    const confirmed: Array<[number, string]> = [];
    for (let i = 0; i < 10; i++) confirmed.push([log.append(`before-${i}`, i), `before-${i}`]);
    await log.sync();
    // The next batch stops inside its second record: a partial write reached the file.
    faults.failWritesAfter(30, 'ENOSPC');
    const refused: Array<[number, string]> = [];
    for (let i = 0; i < 5; i++) refused.push([log.append(`refused-${i}`, i), `refused-${i}`]);
    expect(await rejection(log.sync())).toMatchObject({ ioCode: 'ENOSPC' });
    expect(() => log.append('while full', 0)).toThrow(/ENOSPC/);
    await expect(log.sync()).rejects.toMatchObject({ ioCode: 'ENOSPC' });

    faults.heal(); // space freed
    for (let i = 0; i < 10; i++) confirmed.push([log.append(`after-${i}`, i), `after-${i}`]);
    await log.sync();
    expect(log.nextOffset).toBe(26);
    await adapter.close();

    const again = open(dir);
    const records = readAll(await openLog(again));
    // The refused records were written with the first write after: a rejected publish may be
    // stored, as a broker's nack may. Each record once, in order, nothing partial.
    expect(records).toEqual([...confirmed.slice(0, 10), ...refused, ...confirmed.slice(10)]);
    await again.close();
  });

  test('a sync alone, once space is back, writes what the failed write could not', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const log = await openLog(adapter);
    log.append('first', 1);
    faults.failWritesAfter(3, 'ENOSPC');
    await expect(log.sync()).rejects.toBeInstanceOf(StorageError);
    faults.heal();
    await log.sync();
    await adapter.close();
    const again = open(dir);
    expect(readAll(await openLog(again))).toEqual([[1, 'first']]);
    await again.close();
  });

  test('an ack alone, once space is back, writes what the failed write could not', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const log = await openLog(adapter);
    log.append('acked', 1);
    await log.sync();
    log.append('refused', 2);
    faults.failWritesAfter(3, 'ENOSPC');
    await expect(log.sync()).rejects.toBeInstanceOf(StorageError);
    faults.heal();
    log.markDeleted(1);
    await new Promise((resolve) => setImmediate(resolve));
    await adapter.close();
    const again = open(dir);
    expect(readAll(await openLog(again))).toEqual([[2, 'refused']]);
    await again.close();
  });

  test('a failed fsync keeps the log failed until it is reopened', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const log = await openLog(adapter);
    log.append('confirmed', 1);
    await log.sync();
    log.append('unknown', 2);
    faults.failFsyncs();
    expect(await rejection(log.sync())).toMatchObject({ code: 'MQLITE_STORAGE', ioCode: 'EIO' });
    faults.heal();
    // The kernel may have dropped the pages that fsync failed on: only a reopen, which reads
    // what is on disk, goes on from there.
    expect(() => log.append('refused', 3)).toThrow(StorageError);
    await adapter.close();
    const again = open(dir);
    expect(readAll(await openLog(again))[0]).toEqual([1, 'confirmed']);
    await again.close();
  });
});

describe('fs storage: metadata on a full disk', () => {
  test('a refused write is made once space is back, with nothing of the part that reached the file', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const ns = await adapter.namespace('q');
    ns.meta.set('a', 'x'.repeat(100));
    await ns.meta.sync();
    // 60 bytes of the record reach the file; the one written again is shorter.
    faults.failWritesAfter(60, 'ENOSPC');
    ns.meta.set('b', 'y'.repeat(100));
    await expect(ns.meta.sync()).rejects.toMatchObject({ ioCode: 'ENOSPC' });
    ns.meta.set('b', 'short');
    faults.heal();
    await ns.meta.sync();
    await adapter.close();
    const reports: unknown[] = [];
    const again = open(dir);
    again.onDataLoss?.((loss) => reports.push(loss));
    const reopened = await again.namespace('q');
    expect([...reopened.meta.entries()]).toEqual([
      ['a', 'x'.repeat(100)],
      ['b', 'short'],
    ]);
    expect(reports).toEqual([]);
    await again.close();
  });
});

describe('Broker on a full disk', () => {
  test('Broker.open opens, reports the metadata write it could not make, and makes it later', async () => {
    const dir = freshDir();
    const before = await Broker.open({ storage: fsStorage({ dir }) });
    await before.queue('kept');
    await before.queue('temporary', { durable: false });
    await before.close();
    const faults = faultyIo();
    const storage = fsStorage({ dir, io: faults.io });
    faults.failWritesAfter(0, 'ENOSPC');
    const reports: unknown[] = [];
    // Reopening deletes the non-durable queue: a metadata write, refused.
    const broker = await Broker.open({ storage, onError: (error) => reports.push(error) });
    expect(reports).toEqual([expect.any(StorageError)]);
    expect(reports[0]).toMatchObject({ ioCode: 'ENOSPC' });
    expect(broker.queues().map((q) => q.name)).toEqual(['kept']);
    faults.heal();
    await broker.close();
    const again = await Broker.open({ storage: fsStorage({ dir }) });
    expect(again.queues().map((q) => q.name)).toEqual(['kept']);
    await again.close();
  });

  test('publishes reject with a StorageError and succeed again once space is back', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const broker = await Broker.open({ storage: fsStorage({ dir, io: faults.io }) });
    const queue = await broker.queue('jobs');
    await queue.publish('one');
    faults.failWritesAfter(10, 'ENOSPC');
    const error = await rejection(queue.publish('refused'));
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ ioCode: 'ENOSPC' });
    faults.heal();
    await queue.publish('two');
    await broker.close();

    const again = await Broker.open({ storage: fsStorage({ dir }) });
    const bodies: string[] = [];
    const reopened = await again.queue('jobs');
    for (let m = await reopened.get(); m; m = await reopened.get()) bodies.push(m.bodyString()!);
    expect(bodies).toEqual(['one', 'refused', 'two']);
    await again.close();
  });
});
