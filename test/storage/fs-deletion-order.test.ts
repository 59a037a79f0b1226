/**
 * Deletions reach the disk only after the records appended before them are durable: a record
 * superseded by a newer one (a last-value queue's older value) must not leave the disk while
 * its successor still waits for its fsync. A log whose deletions are independent (a delayed
 * exchange's) writes a deletion as soon as its own record is durable.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { LastValueQueue } from '../../src/queues/lvq/last-value-queue.js';
import { type FsyncPolicy, fsStorage } from '../../src/storage/fs/index.js';
import { encodeName } from '../../src/storage/fs/names.js';
import type { Log, LogOptions, StorageAdapter } from '../../src/storage/types.js';
import { simulateCrash, testRecordCodec } from '../../src/testing/index.js';
import { holdFsyncs } from '../support/held-fsyncs.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-deletion-order-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => path.join(root, `t${++n}`);

const ticks = async (count = 4) => {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
};

function logDir(dir: string): string {
  return path.join(dir, encodeName('q'), encodeName('log'));
}

async function openLog(storage: StorageAdapter, options?: LogOptions): Promise<Log<string>> {
  return (await storage.namespace('q')).openLog('log', testRecordCodec, options);
}

describe.each<[string, FsyncPolicy]>([
  ['always', 'always'],
  ['group commit', { intervalMs: 0 }],
])('fs deletions wait for the records before them (fsync %s)', (_name, fsync) => {
  test('a sealed segment left without live records keeps its file until what followed is durable', async () => {
    const dir = freshDir();
    const storage = fsStorage({ dir, fsync });
    const log = await openLog(storage);
    log.append('old value', 1);
    await log.sync();
    log.roll();
    log.append('new value', 2);
    log.markDeleted(1);
    // In memory the deletion applies at once.
    expect(log.get(1)).toBeUndefined();
    expect(log.segments().map((s) => s.firstOffset)).toEqual([2]);
    // The process dies before the new value reached the disk: the old one must still be there.
    simulateCrash(storage);
    const reopened = fsStorage({ dir, fsync });
    const again = await openLog(reopened);
    expect(again.get(1)).toBe('old value');
    await reopened.close();
  });

  test('marks, unlinks and compaction rewrites wait while the fsync of the records before them runs', async () => {
    const dir = freshDir();
    const faults = holdFsyncs();
    const storage = fsStorage({ dir, fsync, io: faults.io });
    const log = await openLog(storage);
    for (let i = 0; i < 100; i++) log.append(`value ${i + 1}`, i);
    await log.sync();
    log.roll();
    log.append('solo', 200);
    await log.sync();
    log.roll();
    const sealed = path.join(logDir(dir), '0000000001.seg');
    const solo = path.join(logDir(dir), '0000000002.seg');
    const marks = path.join(logDir(dir), '~deleted');
    const sealedBytes = fs.statSync(sealed).size;

    faults.hold();
    log.append('successor', 300);
    const synced = log.sync();
    for (let offset = 1; offset <= 80; offset++) log.markDeleted(offset);
    log.markDeleted(101);
    await ticks();
    // The successor was written and its fsync is pending: no deletion is on disk yet.
    expect(fs.statSync(marks).size).toBe(0);
    expect(fs.existsSync(solo)).toBe(true);
    expect(fs.statSync(sealed).size).toBe(sealedBytes);

    faults.release();
    await synced;
    await ticks();
    expect(fs.statSync(marks).size).toBeGreaterThan(0);
    expect(fs.existsSync(solo)).toBe(false);
    expect(fs.statSync(sealed).size).toBeLessThan(sealedBytes / 2);
    expect(log.count).toBe(21);
    await storage.close();
  });

  test.each([
    ['waits for the records appended before it', undefined, 'settled'],
    [
      'is written at once when deletions are independent',
      { independentDeletions: true },
      undefined,
    ],
  ])('a deletion of a durable record %s', async (_name, options, kept) => {
    const dir = freshDir();
    const faults = holdFsyncs();
    const storage = fsStorage({ dir, fsync, io: faults.io });
    const log = await openLog(storage, options);
    log.append('settled', 1);
    await log.sync();
    faults.hold();
    log.append('published since', 2);
    const synced = log.sync();
    synced.catch(() => {});
    log.markDeleted(1);
    await ticks();
    // The process dies while the fsync of the record appended since is still running.
    simulateCrash(storage);
    faults.release();
    const reopened = fsStorage({ dir, fsync });
    const again = await openLog(reopened, options);
    expect(again.get(1)).toBe(kept);
    await reopened.close();
  });

  test('a sync() after a deletion resolves once the deletion is durable too', async () => {
    const dir = freshDir();
    const storage = fsStorage({ dir, fsync });
    const log = await openLog(storage);
    log.append('a', 1);
    log.append('b', 2);
    log.markDeleted(1);
    await log.sync();
    expect(fs.statSync(path.join(logDir(dir), '~deleted')).size).toBeGreaterThan(0);
    simulateCrash(storage);
    const reopened = fsStorage({ dir, fsync });
    const again = await openLog(reopened);
    expect(again.get(1)).toBeUndefined();
    expect(again.get(2)).toBe('b');
    await reopened.close();
  });
});

test('a last-value queue keeps a value of a key whose newer value a crash lost', async () => {
  const dir = freshDir();
  const storage = fsStorage({ dir, fsync: { intervalMs: 0 } });
  const queue = await LastValueQueue.open({ name: 'prices', storage, key: 'k' });
  // Values large enough that each fills a segment of the queue's log.
  const body = (label: string) => `${label}:${'x'.repeat(300 * 1024)}`;
  await queue.publish(body('v1'), { headers: { k: 'k' } });
  const lost = queue.publish(body('v2'), { headers: { k: 'k' } });
  lost.catch(() => {});
  simulateCrash(storage);
  const reopened = fsStorage({ dir, fsync: 'always' });
  const again = await LastValueQueue.open({ name: 'prices', storage: reopened, key: 'k' });
  const message = await again.get();
  expect(message?.bodyString().slice(0, 2)).toBe('v1');
  await again.close();
  await reopened.close();
});
