/**
 * The fs adapter's on-disk format (src/storage/fs/FORMAT.md), pinned by a data directory of
 * format version 1 committed under fixtures/fs-v1 (written by fixtures/make-v1.ts). Any change
 * that cannot read it exactly fails here: such a change needs a new format version, and code
 * that still reads version 1 or refuses it clearly.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { crc32 } from '../../src/storage/fs/checksum.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { encodeName } from '../../src/storage/fs/names.js';
import type { Log, Namespace, StorageAdapter } from '../../src/storage/types.js';
import { testRecordCodec } from '../../src/testing/index.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/fs-v1', import.meta.url));
const T0 = 1_700_000_000_000;
const HASHED = 'h'.repeat(130);

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-format-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A copy of the fixture to open (opening writes: recovery, the lock, rewritten files). */
function copyFixture(): string {
  const dir = path.join(root, `c${++n}`);
  fs.cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

function removeIndexes(dir: string): void {
  for (const entry of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (entry.endsWith('.idx')) fs.unlinkSync(path.join(dir, entry));
  }
}

const open = (dir: string): StorageAdapter => fsStorage({ dir, fsync: 'never' });

async function openLog(storage: StorageAdapter, ns: string, name: string): Promise<Log<string>> {
  return (await storage.namespace(ns)).openLog(name, testRecordCodec);
}

function readAll(log: Log<string>): Array<[number, string, number]> {
  const rows: Array<[number, string, number]> = [];
  const c = log.cursor();
  while (c.next()) rows.push([c.offset, c.record, c.timestamp]);
  return rows;
}

/** What a log's segments report; `bytes` only where the index is kept (see below). */
function segmentsOf(log: Log<string>, withBytes: boolean) {
  return log.segments().map((s) => ({
    id: s.id,
    firstOffset: s.firstOffset,
    count: s.count,
    deletedCount: s.deletedCount,
    firstTimestamp: s.firstTimestamp,
    lastTimestamp: s.lastTimestamp,
    ...(withBytes ? { bytes: s.bytes } : {}),
  }));
}

function segmentFile(dir: string, log: string, id = 1): string {
  return path.join(dir, 'app', encodeName(log), `${String(id).padStart(10, '0')}.seg`);
}

// Index files are a cache: losing them all must read the same data by scanning the segments.
// Only a compacted segment's `bytes` then differ: the removed records' sizes were only in its
// index (the live totals do not change).
describe.each([
  { how: 'as left on disk', prepare: (_dir: string) => {}, indexed: true },
  { how: 'with every index file lost', prepare: removeIndexes, indexed: false },
])('a format 1 data directory, $how', ({ prepare, indexed }) => {
  async function openFixture(): Promise<{ dir: string; storage: StorageAdapter }> {
    const dir = copyFixture();
    prepare(dir);
    return { dir, storage: open(dir) };
  }

  test('lists its namespaces and logs by their original names', async () => {
    const { storage } = await openFixture();
    expect(await storage.listNamespaces()).toEqual(['app', 'other']);
    const app = await storage.namespace('app');
    expect(await app.listLogs()).toEqual(
      ['Orders/€ 1', 'compacted', 'events', HASHED, 'torn'].sort(),
    );
    expect(await (await storage.namespace('other')).listLogs()).toEqual(['empty']);
    await storage.close();
  });

  test('reads every record of a multi-segment log with its offset, timestamp and deletion', async () => {
    const { storage } = await openFixture();
    const log = await openLog(storage, 'app', 'events');
    expect(readAll(log)).toEqual([
      [1, 'first record .......', T0 + 0.5],
      [3, 'ünïcødé ✓ ..........', T0 + 2000.5],
      [4, 'fourth record ......', T0 + 3000.5],
      [6, 'sixth record .......', T0 + 5000.5],
      [7, 'seventh record .....', T0 + 6000.5],
    ]);
    expect([log.firstOffset, log.nextOffset, log.count, log.bytes]).toEqual([1, 8, 5, 106]);
    expect([log.get(2), log.isDeleted(2), log.isDeleted(5), log.isDeleted(4)]).toEqual([
      undefined,
      true,
      true,
      false,
    ]);
    expect(log.get(4)).toBe('fourth record ......');
    expect(log.timestampOf(2)).toBe(T0 + 1000.5); // a deleted record keeps its timestamp
    expect(log.offsetAt(T0 + 1000.25)).toBe(2);
    expect(log.offsetAt(T0 + 4000)).toBe(5);
    expect(segmentsOf(log, true)).toEqual([
      s(1, 1, 3, 1, 46, T0 + 0.5, T0 + 2000.5),
      s(2, 4, 3, 1, 60, T0 + 3000.5, T0 + 5000.5),
      s(3, 7, 1, 0, 20, T0 + 6000.5, T0 + 6000.5),
    ]);
    await storage.close();
  });

  test('reads a compacted segment: its surviving records keep their offsets', async () => {
    const { dir, storage } = await openFixture();
    const log = await openLog(storage, 'app', 'compacted');
    expect(readAll(log)).toEqual([
      [1, 'c01', T0 + 1],
      [32, 'c32', T0 + 32],
      [64, 'c64', T0 + 64],
      [65, 'c65', T0 + 65],
    ]);
    expect([log.nextOffset, log.count, log.bytes]).toEqual([66, 4, 12]);
    expect([log.get(2), log.get(32), log.isDeleted(63)]).toEqual([undefined, 'c32', true]);
    expect(segmentsOf(log, indexed)).toEqual([
      s(1, 1, 64, 61, indexed ? 192 : undefined, T0 + 1, T0 + 64),
      s(2, 65, 1, 0, indexed ? 3 : undefined, T0 + 65, T0 + 65),
    ]);
    // The partial copy of a compaction cut short is removed.
    expect(fs.existsSync(`${segmentFile(dir, 'compacted')}.tmp`)).toBe(false);
    await storage.close();
  });

  test('cuts a torn tail: the half-written record and the half-written acks are dropped', async () => {
    const { dir, storage } = await openFixture();
    const log = await openLog(storage, 'app', 'torn');
    // Offset 1 was acked in a whole batch; the ack of 2 was torn, so 2 is live again.
    expect(readAll(log)).toEqual([
      [2, 't2', T0],
      [3, 't3', T0],
    ]);
    expect([log.nextOffset, log.count]).toEqual([4, 2]);
    const logDir = path.dirname(segmentFile(dir, 'torn'));
    expect(fs.statSync(segmentFile(dir, 'torn')).size).toBe(24 + 3 * 26);
    expect(fs.statSync(path.join(logDir, '~deleted')).size).toBe(16);
    // The cut tail is gone for good: the next record takes its offset.
    expect(log.append('t4 again', T0 + 2)).toBe(4);
    await storage.close();
    const reopened = open(dir);
    expect(readAll(await openLog(reopened, 'app', 'torn')).map((r) => r[1])).toEqual([
      't2',
      't3',
      't4 again',
    ]);
    await reopened.close();
  });

  test('reads metadata: the latest value of each key, deleted and torn records dropped', async () => {
    const { storage } = await openFixture();
    const app = await storage.namespace('app');
    expect([...app.meta.entries()]).toEqual([
      ['clé ✓', ['värde', null, -0.25]],
      ['offset:reader', 6],
      ['queue:events', { type: 'stream', args: { 'x-max-age': '7D' }, n: 1.5, ok: true }],
    ]);
    expect([...(await storage.namespace('other')).meta.entries()]).toEqual([]);
    await storage.close();
  });

  test('reads logs stored under escaped and hashed names, and an empty log', async () => {
    const { storage } = await openFixture();
    expect(readAll(await openLog(storage, 'app', 'Orders/€ 1'))).toEqual([[1, 'escaped', T0]]);
    expect(readAll(await openLog(storage, 'app', HASHED))).toEqual([[1, 'hashed', T0]]);
    const empty = await openLog(storage, 'other', 'empty');
    expect([empty.firstOffset, empty.nextOffset, empty.count, readAll(empty)]).toEqual([
      1,
      1,
      0,
      [],
    ]);
    await storage.close();
  });

  test('stays writable: appends, acks and metadata continue where the old data ends', async () => {
    const { dir, storage } = await openFixture();
    const log = await openLog(storage, 'app', 'events');
    expect(log.append('eighth', T0 + 7000)).toBe(8);
    log.markDeleted(1);
    (await storage.namespace('app')).meta.set('offset:reader', 8);
    await storage.close();
    const reopened = open(dir);
    const again = await openLog(reopened, 'app', 'events');
    expect(readAll(again).map((r) => r[0])).toEqual([3, 4, 6, 7, 8]);
    expect(again.get(8)).toBe('eighth');
    expect((await reopened.namespace('app')).meta.get('offset:reader')).toBe(8);
    await reopened.close();
  });
});

function s(
  id: number,
  firstOffset: number,
  count: number,
  deletedCount: number,
  bytes: number | undefined,
  firstTimestamp: number,
  lastTimestamp: number,
) {
  return {
    id,
    firstOffset,
    count,
    deletedCount,
    firstTimestamp,
    lastTimestamp,
    ...(bytes === undefined ? {} : { bytes }),
  };
}

describe('the format version of a data directory', () => {
  const formatFile = (dir: string) => path.join(dir, 'FORMAT');

  test('a new directory is marked with format version 1', async () => {
    const dir = path.join(root, `new${++n}`);
    const storage = open(dir);
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe('mqlite-fs 1\n');
    await storage.close();
  });

  test('an existing directory holding no data is adopted (a mount point, dotfiles)', async () => {
    const dir = path.join(root, `mount${++n}`);
    fs.mkdirSync(path.join(dir, 'lost+found'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.keep'), '');
    const storage = open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec);
    await storage.close();
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe('mqlite-fs 1\n');
    expect(fs.existsSync(path.join(dir, 'lost+found'))).toBe(true);
  });

  test('a directory of a newer format version is refused, naming it and both versions', async () => {
    const dir = copyFixture();
    fs.writeFileSync(formatFile(dir), 'mqlite-fs 2\n');
    expect(() => open(dir)).toThrow(
      expect.objectContaining({
        code: 'MQLITE_CORRUPTION',
        message: `INTERNAL_ERROR - data directory '${dir}' is in format version 2; this version of mqlite reads format version 1 only`,
      }),
    );
    // Nothing was touched, and the lock was released.
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe('mqlite-fs 2\n');
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    expect(fs.statSync(segmentFile(dir, 'torn')).size).toBe(
      fs.statSync(segmentFile(FIXTURE, 'torn')).size,
    );
  });

  test('a garbled FORMAT file is corruption', () => {
    const dir = copyFixture();
    fs.writeFileSync(formatFile(dir), 'mqlite-fs one\n');
    expect(() => open(dir)).toThrow(`data directory '${dir}' has a garbled FORMAT`);
  });

  test('a directory holding namespaces but no FORMAT file is refused', () => {
    const dir = copyFixture();
    fs.unlinkSync(formatFile(dir));
    expect(() => open(dir)).toThrow(
      expect.objectContaining({
        code: 'MQLITE_CORRUPTION',
        message: `INTERNAL_ERROR - data directory '${dir}' holds namespace 'app' but no FORMAT file, so its format version is unknown`,
      }),
    );
    expect(fs.existsSync(formatFile(dir))).toBe(false);
  });

  test('a segment file of another version is refused, naming the file', async () => {
    const dir = copyFixture();
    const file = segmentFile(dir, 'events');
    const bytes = fs.readFileSync(file);
    bytes.writeUInt32LE(2, 4);
    bytes.writeUInt32LE(crc32(bytes.subarray(0, 20)), 20);
    fs.writeFileSync(file, bytes);
    const storage = open(dir);
    const app: Namespace = await storage.namespace('app');
    await expect(app.openLog('events', testRecordCodec)).rejects.toThrow(
      `segment ${file} is in format version 2, expected 1`,
    );
    await storage.close();
  });
});
