/** Reading `~meta` back from torn and damaged bytes (FORMAT.md, `~meta`). */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { DataLossError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { metaRecord } from '../../src/storage/fs/meta-records.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-meta-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Opens namespace `ns` over a `~meta` of exactly `bytes`, returning its entries and reports. */
async function readBack(bytes: Buffer) {
  const storage = fsStorage({ dir });
  await (await storage.namespace('ns')).sync();
  await storage.close();
  fs.writeFileSync(path.join(dir, 'ns', '~meta'), bytes);
  const reopened = fsStorage({ dir });
  const reports: DataLossError[] = [];
  reopened.onDataLoss?.((loss) => reports.push(loss));
  const entries = [...(await reopened.namespace('ns')).meta.entries()];
  await reopened.close();
  return { entries, reports };
}

const records = (n: number) =>
  Array.from({ length: n }, (_, i) => metaRecord(`k${i}`, { value: i }));

it('a record damaged in the middle costs only itself', async () => {
  const parts = records(5);
  const bytes = Buffer.concat(parts);
  const at = parts[0]!.length + parts[1]!.length + 10;
  bytes[at]! ^= 0x20;
  const { entries, reports } = await readBack(bytes);
  expect(entries.map(([key]) => key)).toEqual(['k0', 'k1', 'k3', 'k4']);
  expect(reports).toEqual([
    expect.objectContaining({
      kind: 'skipped',
      position: parts[0]!.length + parts[1]!.length,
      end: parts[0]!.length + parts[1]!.length + parts[2]!.length,
    }),
  ]);
  expect(fs.readFileSync(path.join(dir, 'ns', '~meta.damaged'))).toEqual(bytes);
});

it('a record cut short at the end is a torn write, reported', async () => {
  const bytes = Buffer.concat(records(3));
  const { entries, reports } = await readBack(bytes.subarray(0, bytes.length - 5));
  expect(entries.map(([key]) => key)).toEqual(['k0', 'k1']);
  expect(reports).toEqual([expect.objectContaining({ kind: 'torn-write' })]);
});

it('a checksummed record that is not an entry is damage, not a SyntaxError', async () => {
  const json = Buffer.from('{"not":"an entry"}');
  const bad = metaRecord('x', 1);
  const forged = Buffer.alloc(8 + json.length);
  forged.writeUInt32LE(json.length, 0);
  forged.writeUInt32LE(bad.readUInt32LE(4), 4);
  json.copy(forged, 8);
  const { entries, reports } = await readBack(
    Buffer.concat([...records(1), forged, ...records(2)]),
  );
  expect(entries.map(([key]) => key)).toEqual(['k0', 'k1']);
  expect(reports.map((r) => r.kind)).toEqual(['skipped']);
});

it('a clean file reports nothing', async () => {
  const { entries, reports } = await readBack(Buffer.concat(records(3)));
  expect(entries).toHaveLength(3);
  expect(reports).toEqual([]);
});
