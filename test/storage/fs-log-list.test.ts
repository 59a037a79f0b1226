/**
 * The list of a namespace's logs (`~logs`): a log directory lost between runs is reported with
 * its directory instead of being created again empty, and the directories a crash left between a
 * list write and the creation or removal it goes with are told apart from a loss.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { DataLossError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { encodeName } from '../../src/storage/fs/names.js';
import type { Namespace, StorageAdapter } from '../../src/storage/types.js';
import { testRecordCodec } from '../../src/testing/index.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-log-list-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

async function openNamespace(dir: string, reports: DataLossError[] = []) {
  const storage: StorageAdapter = fsStorage({ dir, fsync: 'always' });
  storage.onDataLoss?.((loss) => reports.push(loss));
  const ns: Namespace = await storage.namespace('q');
  return { storage, ns, reports };
}

/** Namespace `q` with logs `a`, `b` and `c` of three records each, closed. */
async function seeded(): Promise<string> {
  const dir = path.join(root, `t${++n}`);
  const { storage, ns } = await openNamespace(dir);
  for (const name of ['a', 'b', 'c']) {
    const log = await ns.openLog(name, testRecordCodec);
    for (const i of [1, 2, 3]) log.append(`${name}${i}`, i);
  }
  await storage.close();
  return dir;
}

const logDir = (dir: string, log: string) => path.join(dir, encodeName('q'), encodeName(log));
const listFile = (dir: string) => path.join(dir, encodeName('q'), '~logs');

async function records(ns: Namespace, name: string): Promise<string[]> {
  const cursor = (await ns.openLog(name, testRecordCodec)).cursor();
  const out: string[] = [];
  while (cursor.next()) out.push(cursor.record);
  return out;
}

describe("the list of a namespace's logs", () => {
  test('a log whose directory is gone is reported once, naming it; the others open', async () => {
    const dir = await seeded();
    fs.rmSync(logDir(dir, 'b'), { recursive: true });
    const { storage, ns, reports } = await openNamespace(dir);
    expect(reports).toEqual([
      expect.objectContaining({
        code: 'MQLITE_DATA_LOSS',
        kind: 'missing',
        file: logDir(dir, 'b'),
        message: `INTERNAL_ERROR - log 'b' of namespace 'q' is missing: its directory ${logDir(dir, 'b')} is gone, and the records it held are lost`,
      }),
    ]);
    expect(await ns.listLogs()).toEqual(['a', 'c']);
    expect(await records(ns, 'a')).toEqual(['a1', 'a2', 'a3']);
    // Used again, it starts empty, and is listed again.
    const b = await ns.openLog('b', testRecordCodec);
    expect(b.count).toBe(0);
    b.append('b again', 4);
    await storage.close();
    const again = await openNamespace(dir);
    expect(again.reports).toEqual([]);
    expect(await records(again.ns, 'b')).toEqual(['b again']);
    await again.storage.close();
  });

  test('a log removed while the namespace is open is reported when it is next opened', async () => {
    const dir = await seeded();
    const { storage, ns, reports } = await openNamespace(dir);
    fs.rmSync(logDir(dir, 'c'), { recursive: true });
    expect((await ns.openLog('c', testRecordCodec)).count).toBe(0);
    expect(reports).toEqual([expect.objectContaining({ kind: 'missing', file: logDir(dir, 'c') })]);
    await storage.close();
  });

  test('a log deleted on purpose is not reported, nor is a deletion a crash cut short', async () => {
    const dir = await seeded();
    let { storage, ns, reports } = await openNamespace(dir);
    await ns.deleteLog('a');
    expect(fs.existsSync(logDir(dir, 'a'))).toBe(false);
    await storage.close();
    // A crash after the directory was renamed aside, before the list was written without it.
    const listed = fs.readFileSync(listFile(dir));
    ({ storage, ns } = await openNamespace(dir));
    const aside = path.join(dir, encodeName('q'), '~removing.b');
    fs.renameSync(logDir(dir, 'b'), aside);
    await storage.close();
    fs.writeFileSync(listFile(dir), listed);
    ({ storage, ns, reports } = await openNamespace(dir));
    expect(reports).toEqual([]);
    // The removal is finished: the directory renamed aside was deleted.
    expect(fs.existsSync(aside)).toBe(false);
    expect(await ns.listLogs()).toEqual(['c']);
    await storage.close();
  });

  test('a log directory the list does not name (a creation cut short) is kept and listed', async () => {
    const dir = await seeded();
    const listed = fs.readFileSync(listFile(dir));
    let { storage, ns } = await openNamespace(dir);
    (await ns.openLog('d', testRecordCodec)).append('d1', 1);
    await storage.close();
    fs.writeFileSync(listFile(dir), listed);
    let reports: DataLossError[];
    ({ storage, ns, reports } = await openNamespace(dir));
    expect(reports).toEqual([]);
    expect(await records(ns, 'd')).toEqual(['d1']);
    await storage.close();
    // Listed from then on: its loss is found.
    fs.rmSync(logDir(dir, 'd'), { recursive: true });
    ({ storage, reports } = await openNamespace(dir));
    expect(reports).toEqual([expect.objectContaining({ kind: 'missing', file: logDir(dir, 'd') })]);
    await storage.close();
  });

  test.each([
    ['missing', (file: string) => fs.unlinkSync(file)],
    ['damaged', (file: string) => fs.writeFileSync(file, 'not a list')],
  ] as const)('a %s list is reported and made again of the logs present', async (kind, spoil) => {
    const dir = await seeded();
    spoil(listFile(dir));
    let { storage, ns, reports } = await openNamespace(dir);
    expect(reports).toEqual([
      expect.objectContaining({
        kind: kind === 'missing' ? 'missing' : 'skipped',
        file: listFile(dir),
        message: expect.stringContaining(
          `is ${kind}: the logs present are taken as the whole namespace, so a log lost with it would not be found`,
        ),
      }),
    ]);
    expect(await ns.listLogs()).toEqual(['a', 'b', 'c']);
    await storage.close();
    fs.rmSync(logDir(dir, 'a'), { recursive: true });
    ({ storage, ns, reports } = await openNamespace(dir));
    expect(reports).toEqual([expect.objectContaining({ kind: 'missing', file: logDir(dir, 'a') })]);
    await storage.close();
  });

  test("a log's segment list lost with all its segments is reported", async () => {
    const dir = await seeded();
    for (const entry of fs.readdirSync(logDir(dir, 'b'))) {
      if (entry !== '~options') fs.rmSync(path.join(logDir(dir, 'b'), entry));
    }
    const { storage, ns, reports } = await openNamespace(dir);
    expect(await records(ns, 'b')).toEqual([]);
    expect(reports).toEqual([
      expect.objectContaining({
        kind: 'missing',
        file: path.join(logDir(dir, 'b'), '~segments'),
        message: expect.stringContaining(
          'is missing: the segment files present are taken as the whole log',
        ),
      }),
    ]);
    await storage.close();
  });

  test('the metadata of a namespace without logs, lost, is reported', async () => {
    const dir = path.join(root, `t${++n}`);
    let { storage, ns, reports } = await openNamespace(dir);
    ns.meta.set('declaration', { durable: true });
    await storage.close();
    fs.rmSync(path.join(dir, encodeName('q'), '~meta'));
    fs.rmSync(path.join(dir, encodeName('q'), '~meta.prev'), { force: true });
    ({ storage, ns, reports } = await openNamespace(dir));
    expect(reports).toEqual([
      expect.objectContaining({ kind: 'missing', file: path.join(dir, encodeName('q'), '~meta') }),
    ]);
    expect(ns.meta.get('declaration')).toBeUndefined();
    await storage.close();
  });

  test('a log whose hashed directory lost the file of its name is found again by the list', async () => {
    const dir = await seeded();
    const long = 'l'.repeat(130);
    let { storage, ns, reports } = await openNamespace(dir);
    (await ns.openLog(long, testRecordCodec)).append('kept', 1);
    await storage.close();
    fs.rmSync(path.join(logDir(dir, long), '~name'));
    ({ storage, ns, reports } = await openNamespace(dir));
    expect(reports).toEqual([]);
    expect(await ns.listLogs()).toEqual(['a', 'b', 'c', long]);
    expect(await records(ns, long)).toEqual(['kept']);
    await storage.close();
  });

  test("a log's lost deletion marks are reported: what they deleted comes back", async () => {
    const dir = await seeded();
    let { storage, ns, reports } = await openNamespace(dir);
    const a = await ns.openLog('a', testRecordCodec);
    a.markDeleted(1);
    await a.sync();
    await storage.close();
    const marks = path.join(logDir(dir, 'a'), '~deleted');
    fs.rmSync(marks);
    ({ storage, ns, reports } = await openNamespace(dir));
    expect(await records(ns, 'a')).toEqual(['a1', 'a2', 'a3']);
    expect(reports).toEqual([
      expect.objectContaining({
        kind: 'missing',
        file: marks,
        message: expect.stringContaining('the deletions (acks) it held are lost'),
      }),
    ]);
    await storage.close();
  });

  test('a new namespace and its new logs report nothing', async () => {
    const dir = path.join(root, `t${++n}`);
    const { storage, ns, reports } = await openNamespace(dir);
    await ns.openLog('fresh', testRecordCodec);
    await storage.close();
    const again = await openNamespace(dir);
    await again.ns.openLog('fresh', testRecordCodec);
    await again.storage.close();
    expect([...reports, ...again.reports]).toEqual([]);
  });
});
