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
import { CorruptionError, FormatVersionError } from '../../src/errors.js';
import { crc32 } from '../../src/storage/fs/checksum.js';
import { encodeName } from '../../src/storage/fs/names.js';
import type { Log, Namespace, StorageAdapter } from '../../src/storage/types.js';
import { testRecordCodec } from '../../src/testing/index.js';
import { openFsStorage } from '../support/open-fs.js';
import { framesOf, toLayout1 } from '../support/segment-file.js';

const fixture = (version: number) =>
  fileURLToPath(new URL(`./fixtures/fs-v${version}`, import.meta.url));
const VERSIONS = [1, 2, 3, 4, 5];
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

const open = (dir: string): Promise<StorageAdapter> => openFsStorage({ dir, fsync: 'never' });

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
    return { dir, storage: await open(dir) };
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
    // Frames of two bytes of record: 24 bytes of header, and 4 of chunk checksum from format 3.
    const frame = 24 + 2 + (version >= 3 ? 4 : 0);
    expect(fs.statSync(segmentFile(dir, 'torn')).size).toBe(24 + 3 * frame);
    expect(fs.statSync(path.join(logDir, '~deleted')).size).toBe(16);
    // The cut tail is gone for good: the next record takes its offset.
    expect(log.append('t4 again', T0 + 2)).toBe(4);
    await storage.close();
    const reopened = await open(dir);
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
    const reopened = await open(dir);
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
    const storage = await open(dir);
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
    await storage.close();
  });

  test.each([1, 2])(
    'a format %i directory is marked current on open; appends go to a new segment of the current layout',
    async (version) => {
      const dir = copyFixture(version);
      const storage = await open(dir);
      expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
      const log = await openLog(storage, 'app', 'events');
      // Segment 3 holds offset 7 and has room for two more 20-byte records, but frames of two
      // layouts never share a segment: 8 starts segment 4.
      for (const i of [8, 9, 10]) {
        expect(log.append(`record ${i} ..........`, T0 + i * 1000)).toBe(i);
      }
      expect(log.segments().map((s) => [s.id, s.firstOffset])).toEqual([
        [1, 1],
        [2, 4],
        [3, 7],
        [4, 8],
      ]);
      await storage.close();
      const layoutOf = (id: number) =>
        fs.readFileSync(segmentFile(dir, 'events', id)).readUInt32LE(4);
      expect([1, 2, 3, 4].map(layoutOf)).toEqual([1, 1, 1, 2]);
      const indexOf = (id: number) =>
        fs.readFileSync(segmentFile(dir, 'events', id).replace(/\.seg$/, '.idx')).readUInt32LE(4);
      // Span checksums are kept for layout 1 segments whose frames were verified (a version 1
      // index stays so); layout 2 segments' chunks carry their own, in a version 1 index.
      expect([1, 2, 3, 4].map(indexOf)).toEqual(version === 1 ? [1, 1, 1, 1] : [2, 2, 2, 1]);
      const reopened = await open(dir);
      const again = await openLog(reopened, 'app', 'events');
      expect(readAll(again).map((r) => r[0])).toEqual([1, 3, 4, 6, 7, 8, 9, 10]);
      await reopened.close();
    },
  );

  test.each([1, 2, 3])(
    'a format %i directory gets its segment lists on open, so a segment lost later is reported',
    async (version) => {
      const dir = copyFixture(version);
      const storage = await open(dir);
      expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
      expect(readAll(await openLog(storage, 'app', 'events')).map((r) => r[0])).toEqual([
        1, 3, 4, 6, 7,
      ]);
      await storage.close();
      expect(fs.existsSync(path.join(dir, 'app', 'events', '~segments'))).toBe(true);
      fs.unlinkSync(segmentFile(dir, 'events', 2));
      const reopened = await open(dir);
      const losses: unknown[] = [];
      reopened.onDataLoss?.((loss) => losses.push(loss));
      const log = await openLog(reopened, 'app', 'events');
      expect(losses).toEqual([
        expect.objectContaining({ kind: 'missing', file: segmentFile(dir, 'events', 2) }),
      ]);
      expect(readAll(log).map((r) => r[0])).toEqual([1, 3, 7]);
      await reopened.close();
    },
  );

  test.each([1, 2, 3, 4])(
    'a format %i directory gets the lists of its logs on open, so a log lost later is reported',
    async (version) => {
      const dir = copyFixture(version);
      const storage = await open(dir);
      const listed = ['app', 'other'].map((ns) => fs.existsSync(path.join(dir, ns, '~logs')));
      expect(listed).toEqual([true, true]);
      expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
      await storage.namespace('app'); // its metadata's torn tail is cut here, reported
      await storage.close();
      const lost = path.join(dir, 'app', encodeName('Orders/€ 1'));
      fs.rmSync(lost, { recursive: true });
      const reopened = await open(dir);
      const losses: unknown[] = [];
      reopened.onDataLoss?.((loss) => losses.push(loss));
      const app = await reopened.namespace('app');
      expect(losses).toEqual([expect.objectContaining({ kind: 'missing', file: lost })]);
      expect(await app.listLogs()).toEqual(['compacted', 'events', HASHED, 'torn'].sort());
      expect(readAll(await openLog(reopened, 'app', 'events')).map((r) => r[0])).toEqual([
        1, 3, 4, 6, 7,
      ]);
      await reopened.close();
    },
  );

  test('an existing directory holding no data is adopted (a mount point, dotfiles)', async () => {
    const dir = path.join(root, `mount${++n}`);
    fs.mkdirSync(path.join(dir, 'lost+found'), { recursive: true });
    fs.writeFileSync(path.join(dir, '.keep'), '');
    const storage = await open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec);
    await storage.close();
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT}\n`);
    expect(fs.existsSync(path.join(dir, 'lost+found'))).toBe(true);
  });

  test('a directory of a newer format version is refused as not corrupt, naming both versions', async () => {
    const dir = copyFixture();
    fs.writeFileSync(formatFile(dir), `mqlite-fs ${CURRENT + 1}\n`);
    let error: unknown;
    try {
      await open(dir);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(FormatVersionError);
    expect(error).not.toBeInstanceOf(CorruptionError);
    expect(error).toMatchObject({
      code: 'MQLITE_FORMAT_VERSION',
      replyCode: 540,
      version: CURRENT + 1,
      readable: { oldest: 1, newest: CURRENT },
      message: `NOT_IMPLEMENTED - data directory '${dir}' is in format version ${CURRENT + 1}, written by a newer mqlite; this version of mqlite reads format versions 1 to ${CURRENT}`,
    });
    // Nothing was touched, and the lock was released.
    expect(fs.readFileSync(formatFile(dir), 'utf8')).toBe(`mqlite-fs ${CURRENT + 1}\n`);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    expect(fs.statSync(segmentFile(dir, 'torn')).size).toBe(
      fs.statSync(segmentFile(fixture(CURRENT), 'torn')).size,
    );
  });

  test('a garbled FORMAT file is corruption', async () => {
    const dir = copyFixture();
    fs.writeFileSync(formatFile(dir), 'mqlite-fs one\n');
    await expect(open(dir)).rejects.toThrow(`data directory '${dir}' has a garbled FORMAT`);
  });

  test('a directory holding namespaces but no FORMAT file is refused', async () => {
    const dir = copyFixture();
    fs.unlinkSync(formatFile(dir));
    await expect(open(dir)).rejects.toThrow(
      expect.objectContaining({
        code: 'MQLITE_CORRUPTION',
        message: `INTERNAL_ERROR - data directory '${dir}' holds namespace 'app' but no FORMAT file, so its format version is unknown`,
      }),
    );
    expect(fs.existsSync(formatFile(dir))).toBe(false);
  });

  test('a segment file of an unknown layout is refused, naming the file', async () => {
    const dir = copyFixture();
    const file = segmentFile(dir, 'events');
    const bytes = fs.readFileSync(file);
    bytes.writeUInt32LE(3, 4);
    bytes.writeUInt32LE(crc32(bytes.subarray(0, 20)), 20);
    fs.writeFileSync(file, bytes);
    const storage = await open(dir);
    const app: Namespace = await storage.namespace('app');
    await expect(app.openLog('events', testRecordCodec)).rejects.toThrow(
      `segment ${file} has layout 3, expected 1 or 2`,
    );
    await storage.close();
  });
});

describe('segments of layout 1 (a checksum per frame, as formats 1 and 2 wrote them)', () => {
  test('are read at scale, checked frame by frame, and compacted into the current layout', async () => {
    const dir = path.join(root, `layout1-${++n}`);
    let storage = await open(dir);
    let log = await (await storage.namespace('q')).openLog('log', testRecordCodec, {
      segmentBytes: 32 * 1024,
    });
    const record = (i: number) => `${i}:${'v'.repeat((i * 53) % 300)}`;
    for (let i = 1; i <= 1000; i++) log.append(record(i), T0 + i);
    await storage.close();
    const logDir = path.join(dir, 'q', 'log');
    const files = fs.readdirSync(logDir).filter((f) => f.endsWith('.seg'));
    expect(files.length).toBeGreaterThan(4);
    for (const f of files) toLayout1(path.join(logDir, f));
    removeIndexes(dir);
    fs.writeFileSync(path.join(dir, 'FORMAT'), 'mqlite-fs 2\n');

    // Damage to one frame is found at that frame: its neighbours still read.
    const second = path.join(logDir, '0000000002.seg');
    const intact = fs.readFileSync(second);
    const target = framesOf(second)[10]!;
    const damaged = Buffer.from(intact);
    damaged[target.pos + 30] = damaged[target.pos + 30]! ^ 1;
    fs.writeFileSync(second, damaged);
    storage = await open(dir);
    await expect((await storage.namespace('q')).openLog('log', testRecordCodec)).rejects.toThrow(
      `record in ${second} at byte ${target.pos} fails its checksum`,
    );
    await storage.close();
    fs.writeFileSync(second, intact);

    storage = await open(dir);
    log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    expect(readAll(log).map((r) => r[1])).toEqual(
      Array.from({ length: 1000 }, (_, i) => record(i + 1)),
    );
    // Most of segment 2 deleted: compaction rewrites it, in the version 2 layout.
    const seg2 = log.segments()[1]!;
    const keep = new Set([seg2.firstOffset, seg2.firstOffset + 7]);
    for (let o = seg2.firstOffset; o < seg2.firstOffset + seg2.count; o++) {
      if (!keep.has(o)) log.markDeleted(o);
    }
    await log.sync();
    await new Promise((resolve) => setImmediate(resolve)); // compaction runs on the next turn
    await log.sync();
    await storage.close();
    expect(fs.readFileSync(second).readUInt32LE(4)).toBe(2);
    expect(framesOf(second).map((f) => f.offset)).toEqual([...keep]);
    expect(framesOf(second).at(-1)!.endsChunk).toBe(true);
    expect(fs.readFileSync(path.join(logDir, '0000000003.seg')).readUInt32LE(4)).toBe(1);

    removeIndexes(dir);
    storage = await open(dir);
    log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    const expected = Array.from({ length: 1000 }, (_, i) => i + 1).filter(
      (o) => o < seg2.firstOffset || o >= seg2.firstOffset + seg2.count || keep.has(o),
    );
    expect(readAll(log).map((r) => r[0])).toEqual(expected);
    expect(log.get(seg2.firstOffset + 7)).toBe(record(seg2.firstOffset + 7));
    await storage.close();
  });

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

  /** A closed log of records of varied sizes over several segments, rewritten in layout 1. */
  async function layout1Log(): Promise<{ dir: string; files: string[] }> {
    const dir = path.join(root, `spans${++n}`);
    const storage = await open(dir);
    const log = await (await storage.namespace('q')).openLog('log', testRecordCodec, {
      segmentBytes: 64 * 1024,
    });
    for (let i = 1; i <= 700; i++) log.append(spanRecord(i), T0 + i);
    await storage.close();
    const logDir = path.join(dir, 'q', 'log');
    const files = fs
      .readdirSync(logDir)
      .filter((f) => f.endsWith('.seg'))
      .sort()
      .map((f) => path.join(logDir, f));
    for (const file of files) toLayout1(file);
    removeIndexes(dir);
    return { dir, files };
  }
  const spanRecord = (i: number) => `${i}:${'r'.repeat((i * 37) % 700)}`;

  test('get span checksums in their index: the running CRC-32 at the end of each span', async () => {
    const { dir, files } = await layout1Log();
    expect(files.length).toBeGreaterThan(2);
    // Scanned on open, each verified frame extends the checksums; the index is written on close.
    let storage = await open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec);
    await storage.close();
    for (const seg of files) expect(expectSpanChecksumsOf(seg)).toBeGreaterThan(3);

    // An index covering a prefix (the segment grew after it was written): the scan of the rest
    // continues the checksums the index left.
    const tail = files.at(-1)!;
    const whole = fs.readFileSync(tail);
    const frames = framesOf(tail);
    fs.truncateSync(tail, frames[Math.floor(frames.length / 2)]!.pos);
    fs.unlinkSync(tail.replace(/\.seg$/, '.idx'));
    storage = await open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec);
    await storage.close();
    fs.writeFileSync(tail, whole);
    storage = await open(dir);
    const log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    expect(readAll(log).map((r) => r[1])).toEqual(
      Array.from({ length: 700 }, (_, i) => spanRecord(i + 1)),
    );
    await storage.close();
    for (const seg of files) expectSpanChecksumsOf(seg);
  });

  test('damage anywhere is found at its frame, after every record before it', async () => {
    const { dir, files } = await layout1Log();
    const storage = await open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec); // writes the indexes
    await storage.close();
    const file = files[0]!;
    const frames = framesOf(file);
    for (const damaged of [0, 37, Math.floor(frames.length / 2), frames.length - 1]) {
      const bytes = fs.readFileSync(file);
      const copy = Buffer.from(bytes);
      copy[frames[damaged]!.pos + 30] = copy[frames[damaged]!.pos + 30]! ^ 0x01;
      fs.writeFileSync(file, copy);
      const again = await open(dir);
      const log = await (await again.namespace('q')).openLog('log', testRecordCodec);
      const seen: number[] = [];
      const cursor = log.cursor();
      expect(() => {
        while (cursor.next()) seen.push(cursor.offset);
      }).toThrow(`record in ${file} at byte ${frames[damaged]!.pos} fails its checksum`);
      expect(seen).toEqual(frames.slice(0, damaged).map((f) => f.offset));
      // The frames on either side read on their own.
      if (damaged > 0) expect(log.get(frames[damaged - 1]!.offset)).toBeDefined();
      if (damaged + 1 < frames.length) expect(log.get(frames[damaged + 1]!.offset)).toBeDefined();
      await again.close();
      fs.writeFileSync(file, bytes);
    }
  });

  test('a span checksum in the index that disagrees with intact records loses none of them', async () => {
    const { dir, files } = await layout1Log();
    let storage = await open(dir);
    await (await storage.namespace('q')).openLog('log', testRecordCodec);
    await storage.close();
    const index = files[0]!.replace(/\.seg$/, '.idx');
    const idx = fs.readFileSync(index);
    const end = idx.length - 4;
    const spans = idx.readUInt32LE(40);
    expect(spans).toBeGreaterThan(3);
    // Span checksums are the last table; spoil one in the middle, keeping the index valid.
    const at = end - 4 * (spans - Math.floor(spans / 2));
    idx.writeUInt32LE((idx.readUInt32LE(at) ^ 1) >>> 0, at);
    idx.writeUInt32LE(crc32(idx.subarray(0, end)), end);
    fs.writeFileSync(index, idx);
    storage = await open(dir);
    const records = readAll(await (await storage.namespace('q')).openLog('log', testRecordCodec));
    expect(records.map((r) => r[1])).toEqual(
      Array.from({ length: 700 }, (_, i) => spanRecord(i + 1)),
    );
    await storage.close();
  });
});
