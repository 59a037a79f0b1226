import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { ErrorEvent, RecoveryEvent } from '../../src/diagnostics.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { encodeName } from '../../src/storage/fs/names.js';
import { faultyIo, simulateCrash, testRecordCodec } from '../../src/testing/index.js';
import { framesOf } from '../support/segment-file.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-recovery-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A log of `confirmed` records, then `torn` more in one write, crashed; returns its segment. */
async function crashedLog(confirmed: number, torn: number): Promise<{ dir: string; file: string }> {
  const dir = path.join(root, `t${++n}`);
  const adapter = fsStorage({ dir, fsync: 'never' });
  const log = await (await adapter.namespace('q')).openLog('log', testRecordCodec);
  for (let i = 0; i < confirmed; i++) log.append(`record-${i}`, i);
  await log.sync();
  for (let i = 0; i < torn; i++) log.append(`torn-${i}`, i);
  await log.sync();
  simulateCrash(adapter);
  const logDir = path.join(dir, encodeName('q'), encodeName('log'));
  const segment = fs.readdirSync(logDir).find((f) => f.endsWith('.seg'))!;
  return { dir, file: path.join(logDir, segment) };
}

/** Reopens the log in `dir`, collecting what `mqlite:recovery` publishes meanwhile. */
async function reopen(dir: string): Promise<{ events: RecoveryEvent[]; count: number }> {
  const events: RecoveryEvent[] = [];
  const listener = (event: unknown) => events.push(event as RecoveryEvent);
  subscribe('mqlite:recovery', listener);
  try {
    const adapter = fsStorage({ dir, fsync: 'never' });
    const log = await (await adapter.namespace('q')).openLog('log', testRecordCodec);
    const count = log.count;
    await adapter.close();
    return { events, count };
  } finally {
    unsubscribe('mqlite:recovery', listener);
  }
}

describe('fs recovery on mqlite:recovery', () => {
  test('publishes a torn tail it cuts: file, position, records and bytes', async () => {
    const { dir, file } = await crashedLog(10, 3);
    const frames = framesOf(file);
    const position = frames[10]!.pos;
    const size = fs.statSync(file).size;
    fs.truncateSync(file, size - 2);

    const { events, count } = await reopen(dir);
    expect(count).toBe(10);
    expect(events).toEqual([
      {
        file,
        position,
        records: 3,
        bytes: size - 2 - position,
        reason: 'is cut short',
        action: 'cut',
      },
    ]);
    expect(fs.statSync(file).size).toBe(position);
  });

  test('counts a partial frame header as a record, and publishes nothing for a clean log', async () => {
    const { dir, file } = await crashedLog(5, 1);
    const position = framesOf(file)[5]!.pos;
    fs.truncateSync(file, position + 10);
    expect((await reopen(dir)).events).toEqual([
      { file, position, records: 1, bytes: 10, reason: 'is cut short', action: 'cut' },
    ]);
    expect((await reopen(dir)).events).toEqual([]);
  });
});

describe('fs background work on mqlite:error', () => {
  test('publishes a compaction that failed, which later syncs reject with', async () => {
    const dir = path.join(root, `t${++n}`);
    const faults = faultyIo();
    const adapter = fsStorage({ dir, fsync: 'never', io: faults.io });
    const log = await (await adapter.namespace('q')).openLog('log', testRecordCodec, {
      segmentBytes: 4096,
    });
    for (let i = 0; i < 500; i++) log.append(`record-${i}`, i);
    await log.sync();
    const events: ErrorEvent[] = [];
    const listener = (event: unknown) => events.push(event as ErrorEvent);
    subscribe('mqlite:error', listener);
    try {
      faults.failWritesAfter(0);
      for (let o = 1; o <= 400; o++) if (o % 10 !== 0) log.markDeleted(o);
      for (let i = 0; i < 10 && events.length === 0; i++) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      unsubscribe('mqlite:error', listener);
    }
    expect(events).toEqual([
      {
        error: expect.objectContaining({ code: 'MQLITE_STORAGE', ioCode: 'EIO' }),
        source: 'compaction',
      },
    ]);
    await expect(log.sync()).rejects.toThrow('EIO');
    faults.heal();
    await adapter.close().catch(() => {});
  });
});
