/**
 * The segment list (`~segments`): a lost segment file is reported, while the files a crash left
 * between a list write and the unlink or creation it goes with are told apart from a loss.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { DataLossError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { encodeName } from '../../src/storage/fs/names.js';
import type { Log, StorageAdapter } from '../../src/storage/types.js';
import { testRecordCodec } from '../../src/testing/index.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-segment-list-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

async function openLog(dir: string, reports: DataLossError[] = []) {
  const storage: StorageAdapter = fsStorage({ dir, fsync: 'never', segmentBytes: 64 });
  storage.onDataLoss?.((loss) => reports.push(loss));
  const log: Log<string> = await (await storage.namespace('q')).openLog('log', testRecordCodec);
  return { storage, log, reports };
}

/** What reopening `dir` reports. */
async function reportsOnReopen(dir: string): Promise<DataLossError[]> {
  const { storage, reports } = await openLog(dir);
  await storage.close();
  return reports;
}

/** A log of `records` records of 20 bytes, three to a segment, closed. */
async function seeded(records: number): Promise<{ dir: string; logDir: string }> {
  const dir = path.join(root, `t${++n}`);
  const { storage, log } = await openLog(dir);
  for (let i = 1; i <= records; i++) log.append(`record ${String(i).padStart(13, '.')}`, i);
  await storage.close();
  return { dir, logDir: path.join(dir, encodeName('q'), encodeName('log')) };
}

const seg = (logDir: string, id: number) =>
  path.join(logDir, `${String(id).padStart(10, '0')}.seg`);

describe('the segment list', () => {
  test('a segment whose records were all deleted is unlinked without a report', async () => {
    const { dir, logDir } = await seeded(9);
    const first = await openLog(dir);
    for (const offset of [1, 2, 3]) first.log.markDeleted(offset);
    await first.log.sync();
    await first.storage.close();
    expect(fs.existsSync(seg(logDir, 1))).toBe(false);
    const again = await openLog(dir);
    expect(again.reports).toEqual([]);
    expect(again.log.count).toBe(6);
    await again.storage.close();
  });

  test('a file the list no longer names (an unlink cut short) is removed, not read again', async () => {
    const { dir, logDir } = await seeded(9);
    const kept = fs.readFileSync(seg(logDir, 1));
    const first = await openLog(dir);
    for (const offset of [1, 2, 3]) first.log.markDeleted(offset);
    await first.log.sync();
    await first.storage.close();
    // The list was written without segment 1, and the crash came before its unlink.
    fs.writeFileSync(seg(logDir, 1), kept);
    fs.writeFileSync(path.join(logDir, '~deleted'), Buffer.alloc(0));
    const again = await openLog(dir);
    expect(again.reports).toEqual([]);
    expect(fs.existsSync(seg(logDir, 1))).toBe(false);
    expect([again.log.firstOffset, again.log.count]).toEqual([4, 6]);
    await again.storage.close();
  });

  test('a file past the last listed (a creation cut short) is kept without a report', async () => {
    const { dir, logDir } = await seeded(9);
    const listed = fs.readFileSync(path.join(logDir, '~segments'));
    const first = await openLog(dir);
    first.log.append('record ......... 10', 10);
    await first.storage.close();
    // Segment 4 exists, the list does not name it yet.
    fs.writeFileSync(path.join(logDir, '~segments'), listed);
    const again = await openLog(dir);
    expect(again.reports).toEqual([]);
    expect([again.log.count, again.log.nextOffset]).toEqual([10, 11]);
    await again.storage.close();
  });

  test('a missing middle segment is reported with its file, and only once', async () => {
    const { dir, logDir } = await seeded(9);
    fs.rmSync(seg(logDir, 2));
    fs.rmSync(seg(logDir, 2).replace('.seg', '.idx'));
    const { storage, log, reports } = await openLog(dir);
    expect(reports).toEqual([expect.objectContaining({ kind: 'missing', file: seg(logDir, 2) })]);
    expect([log.count, log.nextOffset]).toEqual([6, 10]);
    await storage.close();
    expect(await reportsOnReopen(dir)).toEqual([]);
  });

  test('a missing tail segment is reported and no offset it held is handed out again', async () => {
    const { dir, logDir } = await seeded(9);
    fs.rmSync(seg(logDir, 3));
    fs.rmSync(seg(logDir, 3).replace('.seg', '.idx'), { force: true });
    const { storage, log, reports } = await openLog(dir);
    expect(reports).toEqual([expect.objectContaining({ kind: 'missing', file: seg(logDir, 3) })]);
    expect(log.count).toBe(6);
    expect(log.nextOffset).toBeGreaterThan(9);
    const next = log.append('after the loss ......', 100);
    await storage.close();
    const again = await openLog(dir);
    expect(again.reports).toEqual([]);
    expect(again.log.get(next)).toBe('after the loss ......');
    await again.storage.close();
  });

  test('a damaged list is reported, and the log opens from the files present', async () => {
    const { dir, logDir } = await seeded(9);
    const list = path.join(logDir, '~segments');
    const bytes = fs.readFileSync(list);
    bytes[bytes.length - 9]! ^= 0x10;
    fs.writeFileSync(list, bytes);
    const { storage, log, reports } = await openLog(dir);
    expect(reports).toEqual([expect.objectContaining({ kind: 'skipped', file: list })]);
    expect(log.count).toBe(9);
    await storage.close();
    expect(await reportsOnReopen(dir)).toEqual([]);
  });
});
