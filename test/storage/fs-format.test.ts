/**
 * The fs adapter's on-disk format (src/storage/fs/FORMAT.md), pinned by a data directory per
 * format version committed under fixtures/fs-v<N> (written by fixtures/make-fixtures.ts with the
 * code of that version; each holds the same data). Any change that cannot read them exactly
 * fails here: such a change needs a new format version, and code that still reads the old ones
 * or refuses them clearly.
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
import { simulateCrash, testRecordCodec } from '../../src/testing/index.js';

const fixture = (version: number) =>
  fileURLToPath(new URL(`./fixtures/fs-v${version}`, import.meta.url));
const VERSIONS = [1, 2];
const CURRENT = VERSIONS.at(-1)!;
const T0 = 1_700_000_000_000;
const HASHED = 'h'.repeat(130);

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-format-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

let n = 0;
/** A copy of a fixture to open (opening writes: recovery, the lock, rewritten files). */
function copyFixture(version = CURRENT): string {
  const dir = path.join(root, `c${++n}`);
  fs.cpSync(fixture(version), dir, { recursive: true });
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
describe.each(
  VERSIONS.flatMap((version) => [
    { version, how: 'as left on disk', prepare: (_dir: string) => {}, indexed: true },
    { version, how: 'with every index file lost', prepare: removeIndexes, indexed: false },
  ]),
)('a format $version data directory, $how', ({ version, prepare, indexed }) => {
  async function openFixture(): Promise<{ dir: string; storage: StorageAdapter }> {
    const dir = copyFixture(version);
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

  test('a new directory is marked with the current format version', async () => {
    const dir = path.join(root, `new${++n}`);
    const storage = open(dir);
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
    await storage.close();
  });

  test('a format 1 directory is marked 2 on open; new segments get version 2 indexes', async () => {
    const dir = copyFixture(1);
    const storage = open(dir);
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe('mqlite-fs 2\n');
    const log = await openLog(storage, 'app', 'events');
    // Segments of three 20-byte records: the fourth one appended starts segment 4.
    for (const i of [8, 9, 10]) expect(log.append(`record ${i} ..........`, T0 + i * 1000)).toBe(i);
    await storage.close();
    const versionOf = (id: number) =>
      fs.readFileSync(segmentFile(dir, 'events', id).replace(/\.seg$/, '.idx')).readUInt32LE(4);
    // Span checksums cover only bytes this code wrote or verified: segment 3 keeps version 1.
    expect([1, 2, 3, 4].map(versionOf)).toEqual([1, 1, 1, 2]);
    const reopened = open(dir);
    const again = await openLog(reopened, 'app', 'events');
    expect(readAll(again).map((r) => r[0])).toEqual([1, 3, 4, 6, 7, 8, 9, 10]);
    await reopened.close();
  });

  test('an existing directory holding no data is adopted (a mount point, dotfiles)', async () => {
    const dir = path.join(root, `mount${++n}`);
    fs.mkdirSync(path.join(dir, 'lost+found'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.keep'), '');
    const storage = open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec);
    await storage.close();
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
    expect(fs.existsSync(path.join(dir, 'lost+found'))).toBe(true);
  });

  test('a directory of a newer format version is refused, naming it and both versions', async () => {
    const dir = copyFixture();
    fs.writeFileSync(formatFile(dir), 'mqlite-fs 3\n');
    expect(() => open(dir)).toThrow(
      expect.objectContaining({
        code: 'MQLITE_CORRUPTION',
        message: `INTERNAL_ERROR - data directory '${dir}' is in format version 3; this version of mqlite reads format versions 1 to 2`,
      }),
    );
    // Nothing was touched, and the lock was released.
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe('mqlite-fs 3\n');
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    expect(fs.statSync(segmentFile(dir, 'torn')).size).toBe(
      fs.statSync(segmentFile(fixture(CURRENT), 'torn')).size,
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

describe('span checksums of version 2 indexes', () => {
  /** Checks every span checksum of the index beside `seg` against the segment's bytes. */
  function expectSpanChecksumsOf(seg: string): number {
    const idx = fs.readFileSync(seg.replace(/\.seg$/, '.idx'));
    const file = fs.readFileSync(seg);
    expect(idx.readUInt32LE(4)).toBe(2);
    const covered = idx.readDoubleLE(24);
    const sparse = idx.readUInt32LE(20) === 1;
    const slots = idx.readUInt32LE(36);
    const n = idx.readUInt32LE(40);
    const positions = 80 + n * 8;
    const sums = positions + n * 8 + slots * 4 + (sparse ? slots * 4 : 0) + n * 4;
    expect(sums + n * 4 + 4).toBe(idx.length);
    // Entry i: the running checksum from the first frame to the end of span i.
    for (let i = 0; i < n; i++) {
      const to = i + 1 < n ? idx.readDoubleLE(positions + (i + 1) * 8) : covered;
      expect(idx.readUInt32LE(sums + i * 4), `span ${i}`).toBe(crc32(file.subarray(24, to)));
    }
    return n;
  }

  const logFiles = (dir: string) => {
    const logDir = path.join(dir, 'q', 'log');
    return fs
      .readdirSync(logDir)
      .filter((f) => f.endsWith('.seg'))
      .sort()
      .map((f) => path.join(logDir, f));
  };

  test('are the running CRC-32 at the end of each span, however the segment was written', async () => {
    const dir = path.join(root, `spans${++n}`);
    // Records of varied sizes, written in batches that end inside spans, over several segments.
    let storage = open(dir);
    let log = await (await storage.namespace('q')).openLog('log', testRecordCodec, {
      segmentBytes: 64 * 1024,
    });
    const record = (i: number) => `${i}:${'r'.repeat((i * 37) % 700)}`;
    let next = 1;
    for (let batch = 0; batch < 40; batch++) {
      for (let i = 0; i < 17 + batch; i++) log.append(record(next++), T0 + next);
      await log.sync();
    }
    await storage.close();
    const written = logFiles(dir);
    expect(written.length).toBeGreaterThan(2);
    for (const seg of written) expect(expectSpanChecksumsOf(seg)).toBeGreaterThan(3);

    // Continued after a reopen; a sealed segment rebuilt by a scan; one compacted.
    fs.unlinkSync(written[0]!.replace(/\.seg$/, '.idx'));
    storage = open(dir);
    log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    for (let i = 0; i < 50; i++) log.append(record(next++), T0 + next);
    const second = log.segments()[1]!;
    for (let o = second.firstOffset; o < second.firstOffset + second.count - 2; o++) {
      log.markDeleted(o);
    }
    await log.sync();
    await new Promise((resolve) => setImmediate(resolve)); // compaction runs on the next turn
    await log.sync();
    await storage.close();
    for (const seg of logFiles(dir)) expectSpanChecksumsOf(seg);
    expect(fs.readFileSync(written[1]!).readUInt32LE(16)).toBe(1); // compacted: generation 1

    // Appends after the tail's index, then a crash: the scan on reopen continues the checksums
    // the index left, and cuts a torn record.
    storage = open(dir);
    log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    expect(log.nextOffset).toBe(next);
    for (let i = 0; i < 30; i++) log.append(record(next++), T0 + next);
    await log.sync();
    simulateCrash(storage);
    const tail = logFiles(dir).at(-1)!;
    fs.truncateSync(tail, fs.statSync(tail).size - 3);
    const covered = fs.readFileSync(tail.replace(/\.seg$/, '.idx')).readDoubleLE(24);
    expect(covered).toBeLessThan(fs.statSync(tail).size - 100); // the scan starts inside the file
    storage = open(dir);
    log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    expect(log.nextOffset).toBe(next - 1);
    expect(log.get(next - 2)).toBe(record(next - 2));
    await storage.close();
    for (const seg of logFiles(dir)) expectSpanChecksumsOf(seg);
  });
});
