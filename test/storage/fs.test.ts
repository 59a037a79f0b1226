import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { type FsStorageOptions, fsStorage } from '../../src/storage/fs/index.js';
import { encodeName } from '../../src/storage/fs/names.js';
import type { Log, RecordCodec, StorageAdapter } from '../../src/storage/types.js';
import {
  faultyIo,
  simulateCrash,
  storageConformance,
  testRecordCodec,
} from '../../src/testing/index.js';
import { chunkStartOf, framesOf } from '../support/segment-file.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-fs-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

let n = 0;
const freshDir = () => path.join(root, `t${++n}`);
const dirs = new WeakMap<StorageAdapter, string>();
function open(dir = freshDir(), options: Partial<FsStorageOptions> = {}): StorageAdapter {
  const adapter = fsStorage({ dir, fsync: 'never', ...options });
  dirs.set(adapter, dir);
  return adapter;
}

storageConformance({ test, factory: () => open(), prefix: 'fs: ' });
storageConformance({
  test,
  factory: () => open(),
  reopen: async (old) => {
    await old.close();
    return open(dirs.get(old));
  },
  prefix: 'fs reopened: ',
});

async function openLog(adapter: StorageAdapter, segmentBytes?: number): Promise<Log<string>> {
  const ns = await adapter.namespace('q');
  return ns.openLog('log', testRecordCodec, segmentBytes ? { segmentBytes } : {});
}

function readAll(log: Log<string>): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  const c = log.cursor();
  while (c.next()) out.push([c.offset, c.record]);
  return out;
}

function fill(log: Log<string>, count: number, prefix = 'record'): string[] {
  const records: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = `${prefix}-${log.nextOffset}`;
    log.append(r, 1000 + log.nextOffset);
    records.push(r);
  }
  return records;
}

function logDir(dir: string): string {
  return path.join(dir, encodeName('q'), encodeName('log'));
}

/** Reads `log` from the start until the corruption at `pos` of `file`; the offsets read. */
function readUntilCorrupt(log: Log<string>, file: string, pos: number): number[] {
  const seen: number[] = [];
  const cursor = log.cursor();
  expect(() => {
    while (cursor.next()) seen.push(cursor.offset);
  }).toThrow(
    expect.objectContaining({
      code: 'MQLITE_CORRUPTION',
      message: expect.stringContaining(`${file} at byte ${pos}`),
    }),
  );
  return seen;
}

function segmentFiles(dir: string): string[] {
  return fs
    .readdirSync(logDir(dir))
    .filter((f) => f.endsWith('.seg'))
    .sort()
    .map((f) => path.join(logDir(dir), f));
}

describe('fs storage: codecs that encode into the write buffer', () => {
  const utf8 = new TextEncoder();
  const intoCodec: RecordCodec<string> = {
    ...testRecordCodec,
    encodeInto: (record, target, offset) => {
      const { read, written } = utf8.encodeInto(record, target.subarray(offset));
      return read === record.length ? written : -1;
    },
  };

  test('records written in place read back the same across rolls, full buffers and reopen', async () => {
    const dir = freshDir();
    let adapter = open(dir);
    const log = await (await adapter.namespace('q')).openLog('log', intoCodec, {
      segmentBytes: 4096,
    });
    // Over the write buffer's starting size in one tick, with a roll every few dozen records.
    const records = Array.from({ length: 3000 }, (_, i) => `record ${i} ${'x'.repeat(i % 90)}`);
    for (const r of records) log.append(r, 1);
    const seen: string[] = [];
    for (const c = log.cursor(); c.next(); ) seen.push(c.record);
    expect(seen).toEqual(records);
    await adapter.close();
    adapter = open(dir);
    const reopened = await (await adapter.namespace('q')).openLog('log', intoCodec);
    seen.length = 0;
    for (const c = reopened.cursor(); c.next(); ) seen.push(c.record);
    expect(seen).toEqual(records);
    expect(reopened.segments().length).toBeGreaterThan(10);
    await adapter.close();
  });

  test('a record encoded in place that fills the write buffer but for its frame end is kept', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await (await adapter.namespace('q')).openLog('log', intoCodec);
    // Frames of 71-byte records take 99 bytes (24 of header, 4 of chunk checksum): the 662nd
    // record ends 2 bytes short of the 64 KiB the write buffer starts with, its frame 2 past.
    const records = Array.from({ length: 700 }, (_, i) => `${i}`.padStart(71, '.'));
    for (const r of records) log.append(r, 1);
    const seen: string[] = [];
    for (const c = log.cursor(); c.next(); ) seen.push(c.record);
    expect(seen).toEqual(records);
    await adapter.close();
  });
});

/**
 * A log written in one write per count of `writes` (records `record-1`, ...), then a crash:
 * the directory and its segment file.
 */
async function crashedAfterWrites(writes: number[]): Promise<{ dir: string; file: string }> {
  const dir = freshDir();
  const faults = faultyIo();
  const adapter = open(dir, { io: faults.io });
  const log = await openLog(adapter);
  for (const count of writes) {
    fill(log, count);
    await log.sync();
  }
  faults.crash();
  await adapter.close().catch(() => {});
  return { dir, file: segmentFiles(dir)[0]! };
}

describe('fs storage: torn and corrupt data', () => {
  test('a write that fails half-way is cut off on reopen; acknowledged records stay', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const log = await openLog(adapter);
    fill(log, 10);
    await log.sync();
    faults.failWritesAfter(30); // the next batch stops inside its second record
    fill(log, 5, 'lost');
    await expect(log.sync()).rejects.toMatchObject({ code: 'MQLITE_STORAGE', ioCode: 'EIO' });
    expect(() => log.append('after failure', 1)).toThrow(/EIO/);
    faults.heal();
    await adapter.close();

    const again = open(dir);
    const reopened = await openLog(again);
    expect(reopened.nextOffset).toBe(11);
    expect(readAll(reopened).map(([o]) => o)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(reopened.append('next', 2)).toBe(11);
    await again.close();
    const third = open(dir);
    expect(readAll(await openLog(third)).at(-1)).toEqual([11, 'next']);
    await third.close();
  });

  test('a crash leaves a torn tail that is cut on reopen, whatever its length', async () => {
    for (const cut of [1, 7, 23, 24, 30]) {
      // The last record is a write of its own, torn below.
      const { dir, file } = await crashedAfterWrites([19, 1]);
      fs.truncateSync(file, fs.statSync(file).size - cut);

      const again = open(dir);
      const reopened = await openLog(again);
      expect(reopened.nextOffset).toBe(20);
      expect(readAll(reopened)).toHaveLength(19);
      expect(reopened.append('new', 1)).toBe(20);
      await again.close();
    }
  });

  test('a torn write loses its records, and only them, however many it held', async () => {
    // The second write is one checksum chunk: never confirmed as a whole.
    const { dir, file } = await crashedAfterWrites([10, 30]);
    expect(
      framesOf(file)
        .filter((f) => f.endsChunk)
        .map((f) => f.offset),
    ).toEqual([10, 40]);
    fs.truncateSync(file, fs.statSync(file).size - 2);

    const again = open(dir);
    const reopened = await openLog(again);
    expect(reopened.nextOffset).toBe(11);
    expect(readAll(reopened).at(-1)).toEqual([10, 'record-10']);
    await again.close();
  });

  test('appends after the tail index, then a crash: the scan from the index cuts only the torn chunk', async () => {
    const dir = freshDir();
    let adapter = open(dir);
    let log = await openLog(adapter);
    for (let i = 0; i < 200; i++) log.append(`${'x'.repeat(90)}-${log.nextOffset}`, i);
    await adapter.close(); // writes the tail's index
    adapter = open(dir);
    log = await openLog(adapter);
    for (let i = 0; i < 300; i++) log.append(`${'y'.repeat(90)}-${log.nextOffset}`, i);
    await log.sync(); // one write of several chunks
    simulateCrash(adapter);
    const [file] = segmentFiles(dir);
    const lastChunk = chunkStartOf(file!, 500);
    const firstLost = framesOf(file!).find((f) => f.pos === lastChunk)!.offset;
    expect(firstLost).toBeGreaterThan(201);
    // The index covers the first 200 records: the reopen scans only the rest.
    const covered = fs.readFileSync(file!.replace(/\.seg$/, '.idx')).readDoubleLE(24);
    expect(covered).toBe(framesOf(file!)[200]!.pos);
    fs.truncateSync(file!, fs.statSync(file!).size - 3);

    const again = open(dir);
    const reopened = await openLog(again);
    expect(reopened.nextOffset).toBe(firstLost);
    const records = readAll(reopened);
    expect(records).toHaveLength(firstLost - 1);
    expect(records.at(-1)).toEqual([firstLost - 1, `${'y'.repeat(90)}-${firstLost - 1}`]);
    await again.close();
  });

  test('a garbled last record is cut on reopen', async () => {
    const { dir, file } = await crashedAfterWrites([19, 1]);
    const bytes = fs.readFileSync(file);
    bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0xff;
    fs.writeFileSync(file, bytes);

    const again = open(dir);
    const reopened = await openLog(again);
    expect(reopened.nextOffset).toBe(20);
    expect(readAll(reopened).at(-1)).toEqual([19, 'record-19']);
    await again.close();
  });

  test('a corrupt record in the middle is MQLITE_CORRUPTION naming file and position', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    fill(await openLog(adapter, 200), 100);
    await adapter.close();
    const [first] = segmentFiles(dir);
    const bytes = fs.readFileSync(first!);
    bytes[24 + 24 + 2] = bytes[24 + 24 + 2]! ^ 0xff; // inside the first record's payload
    fs.writeFileSync(first!, bytes);

    // With its index intact the segment opens without a scan; reading it finds the damage.
    const again = open(dir);
    const log = await openLog(again);
    expect(() => readAll(log)).toThrow(
      expect.objectContaining({
        code: 'MQLITE_CORRUPTION',
        message: expect.stringContaining(`${first} at byte 24`),
      }),
    );
    expect(() => log.get(1)).toThrow(expect.objectContaining({ code: 'MQLITE_CORRUPTION' }));
    await again.close();

    // Without its index the open scans it and refuses, rather than cutting the log there.
    fs.rmSync(first!.replace(/\.seg$/, '.idx'));
    const third = open(dir);
    await expect(openLog(third)).rejects.toMatchObject({
      code: 'MQLITE_CORRUPTION',
      message: expect.stringContaining(`${first} at byte 24`),
    });
    await third.close();
  });

  test('a read after reopen delivers every record before a corrupt chunk, then reports it', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter, 2000);
    // Ten writes of ten records: ten checksum chunks, all in one span of the sparse index.
    for (let i = 0; i < 10; i++) {
      fill(log, 10);
      await log.sync();
    }
    await adapter.close();
    const [first] = segmentFiles(dir);
    const bytes = fs.readFileSync(first!);
    const frame = framesOf(first!).find((f) => f.offset === 35)!;
    bytes[frame.pos + 24] = bytes[frame.pos + 24]! ^ 0xff;
    fs.writeFileSync(first!, bytes);
    const chunk = chunkStartOf(first!, 35); // records 31 to 40

    const again = open(dir);
    const reopened = await openLog(again);
    // Records of the chunks on either side of the damage read fine on their own.
    expect(reopened.get(41)).toBe('record-41');
    expect(reopened.get(30)).toBe('record-30');
    expect(readUntilCorrupt(reopened, first!, chunk)).toEqual(
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    for (const offset of [31, 35, 40]) {
      expect(() => reopened.get(offset)).toThrow(
        expect.objectContaining({ message: expect.stringContaining(`${first} at byte ${chunk}`) }),
      );
    }
    await again.close();
  });

  /** A closed log of 3,000 records of ~100 bytes: many 4 KiB chunks over several read windows. */
  async function spannedLog(): Promise<{ dir: string; file: string; index: string }> {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter);
    for (let i = 0; i < 3000; i++) log.append(`${'x'.repeat(90)}-${log.nextOffset}`, i);
    await adapter.close();
    const [file] = segmentFiles(dir);
    return { dir, file: file!, index: file!.replace(/\.seg$/, '.idx') };
  }

  test('damage anywhere in a reopened segment is found, after every chunk before it', async () => {
    const { dir, file, index } = await spannedLog();
    // The index holds no checksums (version 1): the chunks carry them.
    expect(fs.readFileSync(index).readUInt32LE(4)).toBe(1);
    const frames = framesOf(file);
    // One write: chunks end where spans do, every 4 KiB or so.
    expect(frames.filter((f) => f.endsChunk).length).toBeGreaterThan(60);
    for (const damaged of [1, 37, 1500, 2999, 3000]) {
      const bytes = fs.readFileSync(file);
      const copy = Buffer.from(bytes);
      copy[frames[damaged - 1]!.pos + 30] = copy[frames[damaged - 1]!.pos + 30]! ^ 0x01;
      fs.writeFileSync(file, copy);
      const chunk = chunkStartOf(file, damaged);
      const firstOfChunk = frames.find((f) => f.pos === chunk)!.offset;
      const again = open(dir);
      const log = await openLog(again);
      expect(readUntilCorrupt(log, file, chunk)).toEqual(
        Array.from({ length: firstOfChunk - 1 }, (_, i) => i + 1),
      );
      await again.close();
      fs.writeFileSync(file, bytes);
    }
  });

  test('damage in the tail followed by valid records is corruption, not a torn tail', async () => {
    // The second write is a second chunk, valid after the damaged first one.
    const { dir, file } = await crashedAfterWrites([10, 10]);
    const bytes = fs.readFileSync(file);
    bytes[24 + 30] = bytes[24 + 30]! ^ 0xff; // the first record
    fs.writeFileSync(file, bytes);
    const again = open(dir);
    await expect(openLog(again)).rejects.toMatchObject({
      code: 'MQLITE_CORRUPTION',
      message: expect.stringContaining(`${file} at byte 24 fails its checksum`),
    });
    await again.close();
  });
});

describe('fs storage: durability', () => {
  test("fsync 'never' writes without fsyncing", async () => {
    const faults = faultyIo();
    const adapter = open(freshDir(), { io: faults.io, fsync: 'never' });
    const log = await openLog(adapter);
    fill(log, 100);
    await log.sync();
    expect(faults.stats.bytesWritten).toBeGreaterThan(100 * 24);
    expect(faults.stats.fsyncs).toBe(0);
    await adapter.close();
  });

  test("fsync 'always' fsyncs before sync resolves, one fsync for a burst", async () => {
    const faults = faultyIo();
    const adapter = open(freshDir(), { io: faults.io, fsync: 'always' });
    const log = await openLog(adapter);
    const before = faults.stats.fsyncs;
    const syncs: Array<Promise<void>> = [];
    for (let i = 0; i < 1000; i++) {
      log.append(`m${i}`, i);
      syncs.push(log.sync());
    }
    expect(new Set(syncs).size).toBe(1);
    await Promise.all(syncs);
    const used = faults.stats.fsyncs - before;
    expect(used).toBeGreaterThanOrEqual(1);
    expect(used).toBeLessThanOrEqual(3); // the segment, plus the directory for new files
    await adapter.close();
  });

  test('group commit shares one fsync round between the syncs of an interval, and one write', async () => {
    const faults = faultyIo();
    const adapter = open(freshDir(), { io: faults.io, fsync: { intervalMs: 200 } });
    const log = await openLog(adapter);
    log.append('first', 1);
    await log.sync(); // after a quiet period: written and fsynced at once
    const fsyncs = faults.stats.fsyncs;
    const writes = faults.stats.writes;
    const waits: Array<Promise<void>> = [];
    for (let i = 0; i < 5; i++) {
      log.append(`m${i}`, i);
      waits.push(log.sync());
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Records a sync waits for are written when its round starts, not at the end of each tick,
    // and are readable meanwhile from the write buffer.
    expect(faults.stats.writes).toBe(writes);
    expect(readAll(log).map(([, r]) => r)).toEqual(['first', 'm0', 'm1', 'm2', 'm3', 'm4']);
    await Promise.all(waits);
    expect(faults.stats.writes - writes).toBe(1);
    expect(faults.stats.fsyncs - fsyncs).toBeLessThanOrEqual(2);
    await adapter.close();
  });

  test('under group commit, records nobody waits for reach the OS at the end of the tick', async () => {
    const faults = faultyIo();
    const dir = freshDir();
    const adapter = open(dir, { io: faults.io, fsync: { intervalMs: 200 } });
    const log = await openLog(adapter);
    log.append('first', 1);
    await log.sync();
    log.append('unawaited', 2);
    await new Promise((resolve) => setImmediate(resolve));
    // A process crash now keeps it: it is in the OS's hands, though not fsynced.
    simulateCrash(adapter);
    const reopened = open(dir);
    expect(readAll(await openLog(reopened)).map(([, r]) => r)).toEqual(['first', 'unawaited']);
    await reopened.close();
  });

  test('a failing fsync rejects the waiting syncs and fails the log', async () => {
    const faults = faultyIo();
    const adapter = open(freshDir(), { io: faults.io, fsync: 'always' });
    const log = await openLog(adapter);
    log.append('a', 1);
    faults.failFsyncs();
    await expect(log.sync()).rejects.toMatchObject({ code: 'MQLITE_STORAGE', ioCode: 'EIO' });
    expect(() => log.append('b', 2)).toThrow(/EIO/);
    faults.heal();
    await adapter.close();
  });

  test('bad fsync policies and options are typed errors', () => {
    const dir = freshDir();
    expect(() => fsStorage({ dir, fsync: 'sometimes' as never })).toThrow(TypeError);
    expect(() => fsStorage({ dir, fsync: { intervalMs: -1 } })).toThrow(RangeError);
    expect(() => fsStorage({ dir, segmentBytes: 0 })).toThrow(RangeError);
    expect(() => fsStorage({} as never)).toThrow(TypeError);
  });
});

describe('fs storage: names on disk', () => {
  const hostile = ['../x', '..', '.', '/', '/etc/passwd', 'a\u0000b', 'C:\\x', 'con', '~meta'];

  test('names never leave the data directory', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    for (const name of [...hostile, 'x'.repeat(255), `${'é'.repeat(127)}x`]) {
      const ns = await adapter.namespace(name);
      const log = await ns.openLog(name, testRecordCodec);
      log.append(name, 1);
    }
    await adapter.close();
    const entries = fs.readdirSync(dir, { recursive: true }) as string[];
    for (const entry of entries) {
      expect(path.resolve(dir, entry).startsWith(dir + path.sep)).toBe(true);
      for (const part of entry.split(path.sep)) {
        expect(Buffer.byteLength(part)).toBeLessThanOrEqual(255);
        expect(part).not.toMatch(/^\.\.?$/);
      }
    }
    expect(fs.readdirSync(root).filter((e) => !e.startsWith('t'))).toEqual([]);
    const again = open(dir);
    expect(await again.listNamespaces()).toEqual(
      [...hostile, 'x'.repeat(255), `${'é'.repeat(127)}x`].sort(),
    );
    await again.close();
  });

  test('names that differ only in case or after a long prefix stay apart', () => {
    const pairs = [
      ['Jobs', 'jobs'],
      ['JOBS', 'jobs'],
      [`${'a'.repeat(200)}1`, `${'a'.repeat(200)}2`],
      ['', '_'],
      ['a_b', 'a\u00e9b'],
    ];
    for (const [a, b] of pairs) {
      expect(encodeName(a!).toLowerCase()).not.toBe(encodeName(b!).toLowerCase());
    }
    expect(encodeName('prio.000')).toBe('prio.000');
    expect(encodeName('orders-eu')).toBe('orders-eu');
  });

  test('priority levels get readable directories of their own', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const ns = await adapter.namespace('jobs');
    for (const level of ['prio.000', 'prio.001']) await ns.openLog(level, testRecordCodec);
    await adapter.close();
    expect(fs.readdirSync(path.join(dir, 'jobs')).filter((e) => !e.startsWith('~'))).toEqual([
      'prio.000',
      'prio.001',
    ]);
  });
});

describe('fs storage: reopening and compaction', () => {
  test('reopening after a clean close reads indexes, not records', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter, 64 * 1024);
    for (let i = 0; i < 20_000; i++) log.append(`record number ${i} with some padding`, i);
    await adapter.close();
    const onDisk = segmentFiles(dir).reduce((sum, f) => sum + fs.statSync(f).size, 0);

    const faults = faultyIo();
    const again = open(dir, { io: faults.io });
    const reopened = await openLog(again);
    expect(reopened.count).toBe(20_000);
    expect(faults.stats.bytesRead).toBeLessThan(onDisk / 10);
    expect(reopened.get(12_345)).toBe('record number 12344 with some padding');
    expect(reopened.offsetAt(15_000)).toBe(15_001);
    await again.close();
  });

  test('a sealed segment gets its index with the next write, unless it is dropped first', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter, 1000);
    const kept = fill(log, 30);
    log.roll();
    const gone = log.nextOffset;
    fill(log, 30);
    log.roll();
    // Everything in the second segment is deleted in the same tick: it goes without an index.
    for (let offset = gone; offset < gone + 30; offset++) log.markDeleted(offset);
    await log.sync();
    const names = fs.readdirSync(logDir(dir)).sort();
    expect(names.filter((f) => f.endsWith('.seg'))).toEqual(['0000000001.seg', '0000000003.seg']);
    expect(names.filter((f) => f.endsWith('.idx'))).toEqual(['0000000001.idx']);
    await adapter.close();
    const again = open(dir);
    expect(readAll(await openLog(again)).map(([, r]) => r)).toEqual(kept);
    await again.close();
  });

  test('after a crash only the tail segment is scanned', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const log = await openLog(adapter, 64 * 1024);
    for (let i = 0; i < 20_000; i++) log.append(`record number ${i} with some padding`, i);
    await log.sync();
    faults.crash();
    await adapter.close().catch(() => {});
    const files = segmentFiles(dir);
    const tail = fs.statSync(files.at(-1)!).size;
    const all = files.reduce((sum, f) => sum + fs.statSync(f).size, 0);

    const counting = faultyIo();
    const again = open(dir, { io: counting.io });
    const reopened = await openLog(again);
    expect(reopened.count).toBe(20_000);
    expect(counting.stats.bytesRead).toBeLessThan(tail + all / 10);
    await again.close();
  });

  test('compaction rewrites mostly deleted segments and keeps offsets', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter, 4096);
    fill(log, 2000);
    const before = segmentFiles(dir).reduce((sum, f) => sum + fs.statSync(f).size, 0);
    const kept = new Map<number, string>();
    for (let o = 1; o <= 2000; o++) {
      if (o % 10 === 0 || o > 1900) kept.set(o, `record-${o}`);
      else log.markDeleted(o);
    }
    await new Promise((resolve) => setImmediate(resolve));
    await log.sync();
    const after = segmentFiles(dir).reduce((sum, f) => sum + fs.statSync(f).size, 0);
    expect(after).toBeLessThan(before / 3);
    const expected = [...kept.entries()];
    expect(readAll(log)).toEqual(expected);
    expect(log.get(500)).toBe('record-500');
    expect(log.get(501)).toBeUndefined();
    expect(log.isDeleted(501)).toBe(true);
    expect(log.count).toBe(kept.size);
    const c = log.cursor(995);
    expect(c.next()).toBe(true);
    expect(c.offset).toBe(1000);
    await adapter.close();

    const again = open(dir);
    const reopened = await openLog(again);
    expect(readAll(reopened)).toEqual(expected);
    expect(reopened.count).toBe(kept.size);
    expect(reopened.nextOffset).toBe(2001);
    expect(reopened.append('more', 1)).toBe(2001);
    await again.close();
  });

  test('a last-value log of 1,000 keys updated 100,000 times stays small on disk', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter, 64 * 1024);
    const latest = new Map<number, number>();
    const body = 'x'.repeat(100);
    for (let i = 0; i < 100_000; i++) {
      const key = i % 7 === 0 ? i % 13 : (i * 7919) % 1000; // some keys far hotter than others
      const previous = latest.get(key);
      if (previous !== undefined) log.markDeleted(previous);
      latest.set(key, log.append(`${key}:${body}`, i));
      if (i % 5000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await new Promise((resolve) => setImmediate(resolve));
    await log.sync();
    const size = fs
      .readdirSync(logDir(dir))
      .reduce((sum, f) => sum + fs.statSync(path.join(logDir(dir), f)).size, 0);
    expect(log.count).toBe(1000);
    expect(size).toBeLessThan(1000 * 150 * 4 + 64 * 1024 * 3);
    await adapter.close();
  });
});

describe('fs storage: metadata', () => {
  test('a key updated on every ack stays one small record on disk', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const ns = await adapter.namespace('q');
    ns.meta.set('args', { 'x-queue-type': 'stream' });
    for (let i = 1; i <= 20_000; i++) {
      ns.meta.set('offset/consumer', i);
      if (i % 10 === 0) await ns.meta.sync();
    }
    const size = fs.statSync(path.join(dir, 'q', '~meta')).size;
    expect(size).toBeLessThan(64 * 1024);
    await adapter.close();
    const again = open(dir);
    expect((await again.namespace('q')).meta.get('offset/consumer')).toBe(20_000);
    await again.close();
  });

  test('a torn metadata record is dropped on reopen, earlier ones kept', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    const ns = await adapter.namespace('q');
    ns.meta.set('kept', 1);
    await ns.meta.sync();
    faults.failWritesAfter(5);
    ns.meta.set('torn', 2);
    await expect(ns.meta.sync()).rejects.toMatchObject({ code: 'MQLITE_STORAGE', ioCode: 'EIO' });
    faults.heal();
    await adapter.close();
    const again = open(dir);
    const meta = (await again.namespace('q')).meta;
    expect([...meta.entries()]).toEqual([['kept', 1]]);
    meta.set('after', 3);
    await again.close();
    const third = open(dir);
    expect([...(await third.namespace('q')).meta.entries()]).toEqual([
      ['after', 3],
      ['kept', 1],
    ]);
    await third.close();
  });
});

describe('fs storage: one user per directory', () => {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const locked = (dir: string, pid: number) => ({
    code: 'MQLITE_RESOURCE_LOCKED',
    replyCode: 405,
    message: expect.stringMatching(new RegExp(`'${literal(path.resolve(dir))}'.* ${pid}\\)?$`)),
  });

  test('a second adapter on an open directory is refused until the first is closed', async () => {
    const dir = freshDir();
    const first = open(dir);
    await first.open!();
    await expect(open(dir).open!()).rejects.toThrow(
      expect.objectContaining(locked(dir, process.pid)),
    );
    await first.close();
    const second = open(dir);
    await second.close();
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
  });

  test('a directory locked by another live process is refused, naming it', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'LOCK'), String(process.ppid));
    await expect(open(dir).listNamespaces()).rejects.toThrow(
      expect.objectContaining(locked(dir, process.ppid)),
    );
    expect(fs.readFileSync(path.join(dir, 'LOCK'), 'utf8')).toBe(String(process.ppid));
  });

  test('a simulated crash releases the directory; what reached the OS is reopened', async () => {
    const dir = freshDir();
    const adapter = open(dir);
    const log = await openLog(adapter);
    log.append('written', 1);
    await log.sync();
    log.append('still buffered', 2);
    simulateCrash(adapter);
    expect(() => log.append('late', 3)).toThrow(expect.objectContaining({ code: 'MQLITE_CLOSED' }));
    await expect(adapter.namespace('q')).rejects.toMatchObject({ code: 'MQLITE_CLOSED' });
    const again = open(dir);
    expect(readAll(await openLog(again))).toEqual([[1, 'written']]);
    await again.close();
  });

  test('closing releases the lock even when the disk fails', async () => {
    const dir = freshDir();
    const faults = faultyIo();
    const adapter = open(dir, { io: faults.io });
    (await openLog(adapter)).append('lost', 1);
    faults.crash();
    await adapter.close().catch(() => {});
    const again = open(dir);
    await again.close();
  });
});

describe('fs storage: cursors', () => {
  test('the current record stays readable while the log is written and rolled', async () => {
    const adapter = open();
    const log = await openLog(adapter, 4096);
    log.append('buffered', 1);
    const tail = log.cursor();
    expect(tail.next()).toBe(true);
    for (let i = 0; i < 2000; i++) log.append(`filler ${i}`, 2);
    await log.sync();
    const head = log.cursor();
    expect(head.next()).toBe(true);
    for (let i = 0; i < 2000; i++) log.append(`more ${i}`, 3);
    await log.sync();
    expect([tail.offset, tail.record, tail.timestamp]).toEqual([1, 'buffered', 1]);
    expect([head.offset, head.record, head.timestamp]).toEqual([1, 'buffered', 1]);
    await adapter.close();
  });

  test('at the end of the log there is no current record', async () => {
    const adapter = open();
    const log = await openLog(adapter);
    log.append('only', 1);
    const c = log.cursor();
    expect(c.next()).toBe(true);
    expect(c.next()).toBe(false);
    expect([c.record, c.timestamp]).toEqual([undefined, Number.NaN]);
    await adapter.close();
  });
});
