/**
 * A full disk or too many open files: a declare they refuse leaves nothing that outlives it, a
 * broker that crashed on a full disk opens on it, and everything works again once space is
 * back, without a reopen. With the fault-injecting I/O layer aimed at the write that fails first
 * on a real full disk, and on a real full file system where this machine lets us mount one.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { StorageError } from '../../src/errors.js';
import { abandonFsStorage, fsStorage } from '../../src/storage/fs/index.js';
import { faultyIo } from '../../src/testing/index.js';
import { bundled } from '../support/bundle.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-full-disk-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => path.join(root, `d${++dirs}`);

const NEW = 'new-when-full';
/** The files of the queue being declared: a full disk refuses them, not the broker's record. */
const NEW_FILES = new RegExp(`[/\\\\]${NEW}[/\\\\]`);

async function bodies(broker: Broker, name: string): Promise<string[]> {
  const queue = await broker.queue(name);
  const out: string[] = [];
  for (let m = await queue.get({ noAck: true }); m; m = await queue.get({ noAck: true })) {
    out.push(m.bodyString());
  }
  return out;
}

/** Reopens `dir` on the real file system: nothing reported, nothing damaged. */
async function reopenClean(dir: string, check: (broker: Broker) => Promise<void>): Promise<void> {
  const reports: unknown[] = [];
  const broker = await Broker.open({
    storage: fsStorage({ dir }),
    onError: (error) => reports.push(error),
  });
  try {
    expect(reports.map(String)).toEqual([]);
    expect(broker.damaged()).toEqual([]);
    await check(broker);
  } finally {
    await broker.close();
  }
}

/** A broker on `dir` through a fault-injecting I/O layer, collecting what it reports. */
async function openFaulty(dir: string) {
  const faults = faultyIo();
  const reports: unknown[] = [];
  const storage = fsStorage({ dir, io: faults.io });
  const broker = await Broker.open({ storage, onError: (error) => reports.push(error) });
  return { broker, faults, reports, storage };
}

describe('a declare refused by the file system', () => {
  test.each([
    ['a full disk (ENOSPC)', 'ENOSPC'],
    ['too many open files (EMFILE)', 'EMFILE'],
  ] as const)(
    'for %s leaves nothing behind; the name is declared again at once',
    async (_, code) => {
      const dir = freshDir();
      const faults = faultyIo();
      const reports: unknown[] = [];
      const broker = await Broker.open({
        storage: fsStorage({ dir, io: faults.io }),
        onError: (error) => reports.push(error),
      });
      await (await broker.queue('kept')).publish('one');
      if (code === 'ENOSPC') faults.failWritesAfter(0, 'ENOSPC', NEW_FILES);
      else faults.failOpens(NEW_FILES);
      const error = await broker.queue(NEW).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect(error).toMatchObject({ ioCode: code, file: expect.stringMatching(NEW_FILES) });
      expect(fs.readdirSync(dir).filter((entry) => entry.includes(NEW))).toEqual([]);
      expect(broker.queues().map((q) => q.name)).toEqual(['kept']);
      expect(reports).toEqual([]);
      faults.heal();
      await (await broker.queue(NEW)).publish('after');
      await broker.close();
      await reopenClean(dir, async (again) => {
        expect(await bodies(again, NEW)).toEqual(['after']);
        expect(await bodies(again, 'kept')).toEqual(['one']);
      });
    },
  );

  test('whose undo fails too is finished by the next open', async () => {
    const dir = freshDir();
    const { broker, faults, reports, storage } = await openFaulty(dir);
    await (await broker.queue('kept')).publish('one');
    // Every open fails: the queue's files, and the directory fsync its removal needs.
    faults.failOpens();
    await expect(broker.queue(NEW)).rejects.toMatchObject({ ioCode: 'EMFILE' });
    expect(reports).toEqual([expect.objectContaining({ ioCode: 'EMFILE' })]);
    abandonFsStorage(storage);
    faults.heal();
    await reopenClean(dir, async (again) => {
      expect(again.queues().map((q) => q.name)).toEqual(['kept']);
      await (await again.queue(NEW)).publish('after');
      expect(await bodies(again, NEW)).toEqual(['after']);
    });
  });
});

describe('a broker that crashed on a full disk', () => {
  test('opens on it, refuses what needs space, and takes it again once space is back', async () => {
    const dir = freshDir();
    const first = fsStorage({ dir });
    const before = await Broker.open({ storage: first });
    for (const name of ['a', 'b', 'c']) await (await before.queue(name)).publish(`${name} 1`);
    // Its metadata holds every declare's two records: a reopen compacts it, if it can.
    abandonFsStorage(first);

    const faults = faultyIo();
    faults.failWritesAfter(0, 'ENOSPC');
    const reports: unknown[] = [];
    const broker = await Broker.open({
      storage: fsStorage({ dir, io: faults.io }),
      onError: (error) => reports.push(error),
    });
    expect(reports).toEqual([]);
    expect(broker.queues().map((q) => [q.name, q.messages])).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
    const a = await broker.queue('a');
    await expect(a.publish('refused')).rejects.toBeInstanceOf(StorageError);
    await expect(broker.queue(NEW)).rejects.toMatchObject({ ioCode: 'ENOSPC' });
    faults.heal();
    await a.publish('a 2');
    await (await broker.queue(NEW)).publish('new 1');
    await broker.close();
    await reopenClean(dir, async (again) => {
      expect(again.queues().map((q) => q.name)).toEqual(['a', 'b', 'c', NEW]);
      // The refused publish may or may not be stored, as a nacked one.
      expect((await bodies(again, 'a')).filter((body) => body !== 'refused')).toEqual([
        'a 1',
        'a 2',
      ]);
      expect(await bodies(again, NEW)).toEqual(['new 1']);
    });
  });
});

describe('deleting on a full disk', () => {
  test('a queue is deleted, which gives its space back, and its record goes once writes work', async () => {
    const dir = freshDir();
    const { broker, faults, reports } = await openFaulty(dir);
    for (const name of ['a', 'b']) await (await broker.queue(name)).publish(`${name} 1`);
    faults.failWritesAfter(0, 'ENOSPC');
    expect(await broker.deleteQueue('a')).toBe(1);
    expect(fs.existsSync(path.join(dir, 'a'))).toBe(false);
    faults.heal();
    await broker.close();
    // The record's removal waited for a write that worked: the close made it.
    expect(reports.every((error) => (error as StorageError).ioCode === 'ENOSPC')).toBe(true);
    await reopenClean(dir, async (again) => {
      expect(again.queues().map((q) => q.name)).toEqual(['b']);
    });
  });
});

/** Mounts a tmpfs of `size` at `at`; false when this machine does not let us. */
function mountTmpfs(at: string, size: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', at], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('a real full file system', () => {
  const mnt = path.join(root, 'mnt');
  let mounted = false;
  beforeAll(() => {
    fs.mkdirSync(mnt);
    mounted = mountTmpfs(mnt, '2m');
  });
  afterAll(() => {
    if (mounted) execFileSync('umount', ['-l', mnt]);
  });

  const filler = path.join(mnt, 'filler');
  /** Fills what is left of the file system with the file `filler`. */
  function fill(): void {
    const fd = fs.openSync(filler, 'a');
    const chunk = Buffer.alloc(4096, 1);
    try {
      for (;;) fs.writeSync(fd, chunk);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    } finally {
      fs.closeSync(fd);
    }
  }

  test('declares, crashes and reopens on it, and works again once space is back', async (context) => {
    // Mounting a tmpfs needs root (or a user namespace allowing it).
    if (!mounted) context.skip('this machine does not let the test mount a tmpfs');
    const dir = path.join(mnt, 'data');
    const storage = fsStorage({ dir, segmentBytes: 64 * 1024 });
    const broker = await Broker.open({ storage });
    const kept = await broker.queue('kept');
    for (let i = 0; i < 100; i++) await kept.publish(`kept ${i}`);
    fill();
    await expect(broker.queue(NEW)).rejects.toMatchObject({ ioCode: 'ENOSPC' });
    expect(fs.readdirSync(dir).filter((entry) => entry.includes(NEW))).toEqual([]);
    abandonFsStorage(storage);

    fill();
    // The one write an open needs: its lock file, of one block (see README's limits).
    fs.truncateSync(filler, fs.statSync(filler).size - 4096);
    const reports: unknown[] = [];
    const full = await Broker.open({
      storage: fsStorage({ dir }),
      onError: (error) => reports.push(error),
    });
    try {
      expect(reports).toEqual([]);
      expect(full.queues().map((q) => [q.name, q.messages])).toEqual([['kept', 100]]);
      // What the open gave back (a partial file of the refused declare) is taken again.
      fill();
      // Larger than the room left in the pages the segment holds.
      const refused = 'refused'.repeat(3000);
      await expect((await full.queue('kept')).publish(refused)).rejects.toMatchObject({
        ioCode: 'ENOSPC',
      });
      fs.rmSync(filler);
      await (await full.queue('kept')).publish('kept 100');
      await (await full.queue(NEW)).publish('new 1');
    } finally {
      await full.close();
    }
    await reopenClean(dir, async (again) => {
      const got = (await bodies(again, 'kept')).filter((body) => !body.startsWith('refused'));
      expect(got).toEqual(Array.from({ length: 101 }, (_, i) => `kept ${i}`));
      expect(await bodies(again, NEW)).toEqual(['new 1']);
    });
  });
});

describe('a real limit of open files', () => {
  test('a declare refused with EMFILE leaves nothing the next open does not remove', async () => {
    const dir = freshDir();
    const script = await bundled(new URL('./fixtures/declare-until-emfile.ts', import.meta.url));
    const out = execFileSync(
      'sh',
      ['-c', 'ulimit -n 64 && exec "$0" "$1" "$2"', process.execPath, script, dir],
      {
        encoding: 'utf8',
      },
    );
    const { failed, declared, ioCode } = JSON.parse(out) as {
      failed: string;
      declared: number;
      ioCode: string;
    };
    expect(ioCode).toBe('EMFILE');
    expect(declared).toBeGreaterThan(0);
    await reopenClean(dir, async (broker) => {
      expect(broker.queues()).toHaveLength(declared);
      expect(await bodies(broker, 'q0')).toEqual(['message of q0']);
      await (await broker.queue(failed)).publish('after');
      expect(await bodies(broker, failed)).toEqual(['after']);
    });
  });
});
