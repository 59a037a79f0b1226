/**
 * The search for intact records after a bad spot of a tail segment: it finds what trying every
 * position finds, and its work, counted in steps (frames walked, bytes checksummed), grows with
 * the bytes searched rather than their square.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, describe, expect, test } from 'vitest';
import { CorruptionError } from '../../src/errors.js';
import { crc32Shift } from '../../src/storage/fs/checksum.js';
import { checkRun, FRAME_CHECKSUM_LAYOUT, SEGMENT_LAYOUT } from '../../src/storage/fs/frame.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import {
  intactRunAfter,
  NONE_INTACT,
  SEARCH_GAVE_UP,
  type SearchWork,
} from '../../src/storage/fs/intact-run.js';
import { encodeName } from '../../src/storage/fs/names.js';
import { simulateCrash, testRecordCodec } from '../../src/testing/index.js';
import { framesOf } from '../support/segment-file.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-intact-run-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

/** Every position tried in turn, as the search was first written: the reference. */
function firstIntactByTryingAll(layout: number, rest: Uint8Array): number {
  for (let at = 1; at + 24 <= rest.length; at++) {
    if (checkRun(layout, rest, at, rest.length, rest.length) > 0) return at;
  }
  return NONE_INTACT;
}

/** A crashed log's tail segment of `records` records (a sync every 7), as a file. */
async function tailSegment(records: number): Promise<{ dir: string; file: string }> {
  const dir = path.join(root, `t${++n}`);
  const storage = fsStorage({ dir, fsync: 'never' });
  const log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
  for (let i = 0; i < records; i++) {
    log.append(`record ${i} `.padEnd(40 + (i % 13) * 9, 'x'), i);
    if (i % 7 === 6) await log.sync();
  }
  await log.sync();
  simulateCrash(storage);
  const logDir = path.join(dir, encodeName('q'), encodeName('log'));
  return { dir, file: path.join(logDir, '0000000001.seg') };
}

/** 28-byte layout 2 frames that never end a chunk: every start walks on and on. */
function unendedFrames(bytes: number): Uint8Array {
  const rest = new Uint8Array(bytes);
  const view = new DataView(rest.buffer);
  for (let at = 0; at + 28 <= bytes; at += 28) view.setUint32(at, 4, true);
  return rest;
}

describe('the search for intact records after a bad spot', () => {
  test('a checksum continued from any state is a shift of it and the checksum from zero', () => {
    const bytes = new Uint8Array(5000).map((_, i) => (i * 7919) % 251);
    for (const length of [0, 1, 3, 24, 255, 4096, 5000]) {
      for (const seed of [0, 1, 0x2144df1c, 0xffffffff, 0x80000000]) {
        const part = bytes.subarray(0, length);
        expect((crc32Shift(seed, length) ^ crc32(part)) >>> 0).toBe(crc32(part, seed));
      }
    }
  });

  test('finds what trying every position finds, wherever a real segment is damaged', async () => {
    const { file } = await tailSegment(400);
    const bytes = fs.readFileSync(file);
    const frames = framesOf(file);
    for (let i = 0; i < frames.length; i += 17) {
      for (const spot of [0, 1, 9, 25]) {
        const damaged = Buffer.from(bytes);
        const at = Math.min(frames[i]!.pos + spot, bytes.length - 1);
        damaged[at]! ^= 0x24;
        const rest = damaged.subarray(frames[i]!.pos);
        expect(intactRunAfter(SEGMENT_LAYOUT, rest, rest.length)).toBe(
          firstIntactByTryingAll(SEGMENT_LAYOUT, rest),
        );
      }
    }
  });

  test('a large tail of frames that never end a chunk is searched in linear work', () => {
    for (const bytes of [1 << 18, 1 << 21]) {
      const work: SearchWork = { steps: 0 };
      expect(intactRunAfter(SEGMENT_LAYOUT, unendedFrames(bytes), bytes, work)).toBe(NONE_INTACT);
      // Trying every position walked ~bytes/28 frames from each of bytes/28 starts.
      expect(work.steps).toBeLessThan(8 * bytes);
    }
  });

  test('a large tail of small frames chained to one large bad one checksums that one once', () => {
    const bytes = 1 << 21;
    const rest = unendedFrames(bytes);
    // A flagged frame at 28 * 100 stating the whole rest of the bytes: a bad chunk that every
    // start before it chains into.
    const last = 28 * 100;
    const view = new DataView(rest.buffer);
    view.setUint32(last, bytes - last - 24, true);
    view.setUint32(last + 8, 0x80000000, true);
    const work: SearchWork = { steps: 0 };
    expect(intactRunAfter(SEGMENT_LAYOUT, rest, bytes, work)).toBe(NONE_INTACT);
    expect(work.steps).toBeLessThan(8 * bytes);
  });

  test('zeros, the tail a lost page leaves, cost a step a byte', () => {
    const bytes = 1 << 21;
    for (const layout of [SEGMENT_LAYOUT, FRAME_CHECKSUM_LAYOUT]) {
      const work: SearchWork = { steps: 0 };
      expect(intactRunAfter(layout, new Uint8Array(bytes), bytes, work)).toBe(NONE_INTACT);
      expect(work.steps).toBeLessThan(32 * bytes);
    }
  });

  test('stated lengths that always fit make the search give up within its bound, not run on', () => {
    const bytes = 1 << 20;
    const rest = new Uint8Array(bytes);
    for (let at = 0; at < bytes; at += 4) rest[at + 1] = 0x10;
    const work: SearchWork = { steps: 0 };
    expect(intactRunAfter(FRAME_CHECKSUM_LAYOUT, rest, bytes, work)).toBe(SEARCH_GAVE_UP);
    expect(work.steps).toBeLessThan(66 * bytes + (1 << 22));
  });

  test('a large torn tail is cut on open; one with a record intact far after it is damage', async () => {
    const { dir, file } = await tailSegment(300);
    const intact = fs.readFileSync(file);
    const frames = framesOf(file);
    // A chunk that starts after ten frames or more.
    const cut = frames.findIndex((_frame, i) => i >= 10 && frames[i - 1]!.endsChunk);
    const at = frames[cut]!.pos;
    // Torn: the last write cut short, then a megabyte of frames no writer finished.
    fs.writeFileSync(file, Buffer.concat([intact.subarray(0, at + 30), unendedFrames(1 << 20)]));
    const storage = fsStorage({ dir, fsync: 'never' });
    const losses: unknown[] = [];
    storage.onDataLoss?.((loss) => losses.push(loss));
    const log = await (await storage.namespace('q')).openLog('log', testRecordCodec);
    expect(losses).toEqual([expect.objectContaining({ kind: 'torn-write', position: at })]);
    expect(log.count).toBe(cut);
    await storage.close();

    // Damaged: the same megabyte, then the segment's intact last chunk.
    const lastChunk = frames.findLast((_frame, i) => frames[i - 1]?.endsChunk)!;
    fs.writeFileSync(
      file,
      Buffer.concat([
        intact.subarray(0, at + 30),
        unendedFrames(1 << 20),
        intact.subarray(lastChunk.pos),
      ]),
    );
    const again = fsStorage({ dir, fsync: 'never' });
    const opened = (await again.namespace('q')).openLog('log', testRecordCodec);
    await expect(opened).rejects.toBeInstanceOf(CorruptionError);
    await expect(opened).rejects.toMatchObject({
      file,
      position: at,
      end: at + 30 + (1 << 20),
    });
    await again.close();
  });
});
