import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { CorruptionError, type DataLossError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { verifyDataDirectory } from '../../src/storage/fs/verify.js';
import { testRecordCodec } from '../../src/testing/index.js';

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A log `ns/l` of three writes (three chunks) in one segment; returns the segment's path. */
async function threeWrites(): Promise<string> {
  dir = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-verify-'));
  const storage = fsStorage({ dir });
  const log = await (await storage.namespace('ns')).openLog('l', testRecordCodec);
  for (const record of ['first', 'second', 'third']) {
    log.append(record, 1);
    await log.sync();
  }
  await storage.close();
  return path.join(dir, 'ns', 'l', '0000000001.seg');
}

/**
 * What reopening the directory does: the losses it reports, or the error it (or reading the
 * first record) fails with.
 */
async function reopen(): Promise<{ losses: DataLossError[]; error?: unknown }> {
  const storage = fsStorage({ dir });
  const losses: DataLossError[] = [];
  storage.onDataLoss?.((loss) => losses.push(loss));
  try {
    const log = await (await storage.namespace('ns')).openLog('l', testRecordCodec);
    log.get(1);
    return { losses };
  } catch (error) {
    return { losses, error };
  } finally {
    await storage.close();
  }
}

test('damage in the tail with intact chunks after it is refused where the reopen refuses it', async () => {
  const segment = await threeWrites();
  const bytes = fs.readFileSync(segment);
  bytes[24 + 26] = bytes[24 + 26]! ^ 0xff; // in the first chunk's record
  fs.writeFileSync(segment, bytes);
  const { damage } = await verifyDataDirectory(dir);
  expect(damage).toEqual([
    expect.objectContaining({ file: segment, position: 24, action: 'refuse', log: 'l' }),
  ]);
  // Its index covers the bytes: the reopen trusts it, and reading the record fails.
  const read = await reopen();
  expect(read.error).toBeInstanceOf(CorruptionError);
  expect(read.error).toMatchObject({ file: segment, position: 24 });
  // Without it (a crash before it was written), the reopen scans and refuses the log.
  fs.unlinkSync(segment.replace(/\.seg$/, '.idx'));
  const scanned = await reopen();
  expect(scanned.error).toBeInstanceOf(CorruptionError);
  expect(scanned.error).toMatchObject({ file: segment, position: 24, end: damage[0]!.end });
});

test('a cut-short tail is a cut at the byte where the reopen cuts it', async () => {
  const segment = await threeWrites();
  const size = fs.statSync(segment).size;
  fs.truncateSync(segment, size - 3);
  const { damage } = await verifyDataDirectory(dir);
  expect(damage).toEqual([
    expect.objectContaining({ file: segment, end: size - 3, action: 'cut' }),
  ]);
  const { losses, error } = await reopen();
  expect(error).toBeUndefined();
  expect(losses).toEqual([
    expect.objectContaining({ kind: 'torn-write', file: segment, position: damage[0]!.position }),
  ]);
  // The reopen cut it: nothing is damaged any more.
  expect((await verifyDataDirectory(dir)).damage).toEqual([]);
});
