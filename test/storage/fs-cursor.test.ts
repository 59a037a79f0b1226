import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { fsStorage } from '../../src/storage/fs/index.js';
import type { Log, StorageAdapter } from '../../src/storage/types.js';
import { testRecordCodec } from '../../src/testing/index.js';

// Cursors walk verified runs of a read window without the reader; these tests cross windows
// (256 KiB), segments and the write buffer, and change the log under a cursor mid-run.

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-fs-cursor-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

let n = 0;
const PAD = 'x'.repeat(100);
const RECORDS = 6000; // about 750 KiB: several windows

async function openLog(dir: string): Promise<{ storage: StorageAdapter; log: Log<string> }> {
  const storage = fsStorage({ dir, fsync: 'never' });
  const ns = await storage.namespace('q');
  const log = await ns.openLog('log', testRecordCodec, { segmentBytes: 256 * 1024 });
  return { storage, log };
}

/** A log of RECORDS records, closed and reopened so that reads come from disk. */
async function reopened(): Promise<{ storage: StorageAdapter; log: Log<string> }> {
  const dir = path.join(root, `t${++n}`);
  const first = await openLog(dir);
  for (let i = 1; i <= RECORDS; i++) first.log.append(`${i}${PAD}`, 1000 + i);
  await first.storage.close();
  return openLog(dir);
}

function offsets(log: Log<string>, from?: number): number[] {
  const out: number[] = [];
  const c = log.cursor(from);
  while (c.next()) {
    if (c.record !== `${c.offset}${PAD}`) throw new Error(`record ${c.offset} reads wrong`);
    out.push(c.offset);
  }
  return out;
}

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('a reopened log spanning several windows and segments reads back whole and in order', async () => {
  const { storage, log } = await reopened();
  expect(log.segments().length).toBeGreaterThan(2);
  expect(offsets(log)).toEqual(range(1, RECORDS));
  // Timestamps read on some records only still belong to the record read.
  const c = log.cursor();
  while (c.next()) if (c.offset % 997 === 0) expect(c.timestamp).toBe(1000 + c.offset);
  expect(c.timestamp).toBeNaN();
  await storage.close();
});

test('deleted records are skipped, also when marked while a cursor is inside their window', async () => {
  const { storage, log } = await reopened();
  log.markDeleted(2);
  const c = log.cursor();
  expect(c.next() && c.offset).toBe(1);
  const deleted = [3, 4, 5, 1000, 2500, 2501, RECORDS];
  for (const offset of deleted) log.markDeleted(offset);
  const seen: number[] = [];
  while (c.next()) seen.push(c.offset);
  const expected = range(3, RECORDS).filter((o) => !deleted.includes(o));
  expect(seen).toEqual(expected);
  await storage.close();
});

test('a cursor started or sought into the middle of a window yields from that offset', async () => {
  const { storage, log } = await reopened();
  expect(offsets(log, 3001)).toEqual(range(3001, RECORDS));
  const c = log.cursor(10);
  for (let i = 0; i < 100; i++) c.next();
  expect(c.offset).toBe(109);
  c.seek(50); // backwards within the run already read
  expect(c.next() && c.offset).toBe(50);
  c.seek(4000); // forwards, skipping frames
  expect(c.next() && c.offset).toBe(4000);
  expect(c.next() && c.offset).toBe(4001);
  await storage.close();
});

test('a cursor at the end sees later appends, from the write buffer and then from disk', async () => {
  const { storage, log } = await reopened();
  const c = log.cursor(RECORDS - 1);
  expect(c.next() && c.offset).toBe(RECORDS - 1);
  expect(c.next() && c.offset).toBe(RECORDS);
  expect(c.next()).toBe(false);
  log.append(`${RECORDS + 1}${PAD}`, 1);
  log.append(`${RECORDS + 2}${PAD}`, 2);
  expect(c.next() && c.record).toBe(`${RECORDS + 1}${PAD}`);
  await log.sync();
  log.append(`${RECORDS + 3}${PAD}`, 3); // reuses the write buffer
  expect(c.record).toBe(`${RECORDS + 1}${PAD}`);
  expect(c.next() && [c.offset, c.timestamp]).toEqual([RECORDS + 2, 2]);
  expect(c.next() && c.offset).toBe(RECORDS + 3);
  expect(c.next()).toBe(false);
  await storage.close();
});

test('a cursor whose segment is dropped mid-run continues from the oldest retained record', async () => {
  const { storage, log } = await reopened();
  const c = log.cursor();
  for (let i = 0; i < 10; i++) c.next();
  expect(log.dropBefore(4000)).toBeGreaterThan(10);
  const head = log.firstOffset;
  const seen: number[] = [];
  while (c.next()) seen.push(c.offset);
  expect(seen).toEqual(range(head, RECORDS));
  await storage.close();
});

test('a cursor on a closed log throws MQLITE_CLOSED once its run is used up', async () => {
  const { storage, log } = await reopened();
  const c = log.cursor();
  c.next();
  await storage.close();
  expect(() => c.next()).toThrow(expect.objectContaining({ code: 'MQLITE_CLOSED' }));
});
