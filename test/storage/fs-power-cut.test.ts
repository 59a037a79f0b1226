/**
 * A power cut at any step of creating or removing a namespace and its logs: reopening reports
 * nothing lost (what was cut short held nothing anyone was promised), and the namespace is then
 * there, opening without a report, or not there. Each test runs the steps once on a disk that
 * forgets what was not fsynced (test/support/power-loss-disk.ts), then reopens every distinct disk
 * a crash after each step may leave.
 */
import { afterAll, describe, expect, test } from 'vitest';
import type { DataLossError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import type { StorageAdapter } from '../../src/storage/types.js';
import { testRecordCodec } from '../../src/testing/index.js';
import { tempDir as freshDir, removeDataDirs } from '../support/data-dirs.js';
import { type CrashState, distinctStates, PowerLossDisk } from '../support/power-loss-disk.js';

afterAll(removeDataDirs);

/** A name long enough to be hashed, so its directory holds `~name` too. */
const LONG = `n${'x'.repeat(130)}`;

function open(disk: PowerLossDisk, losses: DataLossError[]): StorageAdapter {
  const storage = fsStorage({ dir: disk.root, io: disk.io, fsync: 'always' });
  storage.onDataLoss?.((loss) => losses.push(loss));
  return storage;
}

/** A disk holding the namespace `kept` with a synced log, and `subject` with `logs` when given. */
async function prepared(dir: string, subject?: readonly string[]) {
  const disk = new PowerLossDisk(dir);
  const storage = open(disk, []);
  const log = await (await storage.namespace('kept')).openLog('log', testRecordCodec);
  log.append('a', 1);
  log.append('b', 2);
  await log.sync();
  if (subject) {
    const ns = await storage.namespace('subject');
    ns.meta.set('key', 'value');
    for (const name of subject) {
      const sub = await ns.openLog(name, testRecordCodec);
      sub.append(name, 1);
      await sub.sync();
    }
    await ns.sync();
  }
  return { disk, storage };
}

/** Reopens `state`: nothing reported, `kept` whole, and `check` on the namespace `subject`. */
async function reopen(
  dir: string,
  state: CrashState,
  check: (storage: StorageAdapter, present: boolean) => Promise<void>,
): Promise<void> {
  const losses: DataLossError[] = [];
  const storage = open(new PowerLossDisk(dir, state.inodes), losses);
  try {
    const present = (await storage.listNamespaces()).includes('subject');
    const kept = await (await storage.namespace('kept')).openLog('log', testRecordCodec);
    expect([kept.get(1), kept.get(2)], state.label).toEqual(['a', 'b']);
    await check(storage, present);
    expect(losses.map(String), state.label).toEqual([]);
  } finally {
    await storage.close();
  }
}

describe('fs storage across a power cut', () => {
  test('while a namespace and its logs are created, reports nothing on reopen', async () => {
    const dir = freshDir();
    const { disk, storage } = await prepared(dir);
    disk.record();
    const ns = await storage.namespace('subject');
    await ns.openLog('one', testRecordCodec);
    await ns.openLog(LONG, testRecordCodec);
    const states = disk.crashStates();
    await storage.close();
    expect(states.length).toBeGreaterThan(40);
    for (const state of distinctStates(states)) {
      await reopen(dir, state, async (reopened, present) => {
        if (!present) return;
        const again = await reopened.namespace('subject');
        for (const name of await again.listLogs()) {
          expect((await again.openLog(name, testRecordCodec)).count, state.label).toBe(0);
        }
      });
    }
  });

  test('while a namespace is deleted, leaves it whole or gone and reports nothing', async () => {
    const dir = freshDir();
    const { disk, storage } = await prepared(dir, ['one', LONG]);
    disk.record();
    await storage.deleteNamespace('subject');
    const states = disk.crashStates();
    await storage.close();
    for (const state of distinctStates(states)) {
      await reopen(dir, state, async (reopened, present) => {
        if (!present) return;
        const again = await reopened.namespace('subject');
        expect(again.meta.get('key'), state.label).toBe('value');
        for (const name of ['one', LONG]) {
          expect((await again.openLog(name, testRecordCodec)).get(1), state.label).toBe(name);
        }
      });
    }
  });

  test('while a log is deleted, leaves it whole or gone and reports nothing', async () => {
    const dir = freshDir();
    const { disk, storage } = await prepared(dir, ['one', 'two']);
    disk.record();
    await (await storage.namespace('subject')).deleteLog('one');
    const states = disk.crashStates();
    await storage.close();
    for (const state of distinctStates(states)) {
      await reopen(dir, state, async (reopened, present) => {
        expect(present, state.label).toBe(true);
        const again = await reopened.namespace('subject');
        expect((await again.openLog('two', testRecordCodec)).get(1), state.label).toBe('two');
        if ((await again.listLogs()).includes('one')) {
          expect((await again.openLog('one', testRecordCodec)).get(1), state.label).toBe('one');
        }
      });
    }
  });
});
