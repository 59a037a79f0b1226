/**
 * Damage never causes a deletion: a data directory of every queue kind, with an exchange, a
 * binding and a policy, has one bit flipped or the file cut at every byte of the broker's
 * metadata and of each queue's own, each on a fresh view of the directory. No intact queue's
 * directory is ever removed, every queue comes back with its messages or is kept apart, and
 * the damage is reported.
 *
 * Each case opens the directory through an overlay (reads from the disk, writes kept in
 * memory), so the fixture is written once and no case changes it; cases the metadata reader
 * reads alike (the same entries, damage or none) are opened once.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { readMetaRecords } from '../../src/storage/fs/meta-records.js';
import { overlayIo } from '../../src/storage/fs/overlay-io.js';

const QUEUES = {
  s: { arguments: { 'x-queue-type': 'stream' } },
  c: {},
  p: { arguments: { 'x-max-priority': 5 } },
  l: { arguments: { 'qpid.last_value_queue_key': 'k' } },
} as const;
type Name = keyof typeof QUEUES;
const NAMES = Object.keys(QUEUES) as Name[];

let dir: string;
/** Messages of each queue in the fixture, as a clean open finds them. */
let messages: Record<string, number>;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-restore-damage-'));
  const broker = await Broker.open({ storage: fsStorage({ dir, fsync: 'never' }) });
  const exchange = await broker.exchange('orders', 'direct');
  for (const name of NAMES) {
    const queue = await broker.queue(name, QUEUES[name]);
    for (let i = 0; i < 3; i++) {
      await queue.publish(`${name} ${i}`, { priority: i, headers: { k: `k${i}` } });
    }
  }
  await (await broker.queue('c')).bind(exchange.name, 'new');
  await broker.setPolicy('limits', { pattern: '^c$', definition: { 'max-length': 100 } });
  // Acks leave delivered marks in the queues' own metadata.
  for (const name of ['c', 'l'] as const) {
    await (await broker.queue(name, QUEUES[name])).get({ noAck: true });
  }
  // A queue declared and deleted leaves its records behind.
  await broker.queue('gone');
  await broker.deleteQueue('gone');
  await broker.close();
  messages = await clean();
}, 60_000);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function clean(): Promise<Record<string, number>> {
  const broker = await Broker.open({ storage: fsStorage({ dir, io: overlayIo() }) });
  const found = Object.fromEntries(broker.queues().map((q) => [q.name, q.messages]));
  await broker.close();
  return found;
}

/**
 * Opens the fixture with `file` holding `bytes`; returns what a failure would say, or undefined
 * when every queue directory is still there, every queue is open with its messages or kept
 * apart, and something was reported (unless `silent`).
 */
async function check(file: string, bytes: Buffer, silent: boolean): Promise<string | undefined> {
  const io = overlayIo();
  const fd = io.openSync(file, 'w');
  io.writeSync(fd, bytes, 0, bytes.length, 0);
  io.closeSync(fd);
  const reports: unknown[] = [];
  const broker = await Broker.open({
    storage: fsStorage({ dir, io, fsync: 'never' }),
    onError: (error) => reports.push(error),
  });
  const open = Object.fromEntries(broker.queues().map((q) => [q.name, q.messages]));
  const apart = new Set(broker.damaged().map((q) => q.name));
  await broker.close();
  for (const name of NAMES) {
    if (!io.isDirectorySync(path.join(dir, name))) return `queue ${name} was deleted`;
    if (apart.has(name)) continue;
    if (open[name] !== messages[name]) {
      return `queue ${name} holds ${open[name]} messages, not ${messages[name]}`;
    }
  }
  return reports.length === 0 && !silent ? 'nothing was reported' : undefined;
}

/**
 * What the metadata store makes of `bytes`, read by its own reader: the entries and whether any
 * damage was found. Cases that read alike open alike, so each reading is opened once.
 */
function reading(bytes: Buffer): string {
  const entries = new Map<string, unknown>();
  const read = readMetaRecords(bytes, (key, value) => {
    if (value === undefined) entries.delete(key);
    else entries.set(key, value);
  });
  const damaged = read.tornAt >= 0 || read.damaged.length > 0;
  return JSON.stringify([damaged, [...entries].sort(([a], [b]) => (a < b ? -1 : 1))]);
}

/**
 * Every case of one file, a bit flipped at each byte and the file cut at each byte; a cut where
 * `silent` says nothing can tell (between two records) need not be reported.
 */
async function damageEveryByte(file: string, silent: (at: number) => boolean): Promise<string[]> {
  const bytes = fs.readFileSync(file);
  const cases = new Map<string, { bytes: Buffer; labels: string[]; silent: boolean }>();
  const add = (damaged: Buffer, label: string, quiet: boolean) => {
    const key = `${quiet}${reading(damaged)}`;
    const known = cases.get(key);
    if (known) known.labels.push(label);
    else cases.set(key, { bytes: damaged, labels: [label], silent: quiet });
  };
  for (let at = 0; at < bytes.length; at++) {
    const flipped = Buffer.from(bytes);
    flipped[at]! ^= 0x10;
    add(flipped, `bit flipped at byte ${at}`, false);
    add(bytes.subarray(0, at), `cut at byte ${at}`, silent(at));
  }
  const failures: string[] = [];
  for (const { bytes: damaged, labels, silent: quiet } of cases.values()) {
    const failure = await check(file, damaged, quiet);
    if (failure) failures.push(`${labels.join(', ')}: ${failure}`);
  }
  return failures;
}

/** Where each record of a `~meta` file starts (its length, crc and JSON follow). */
function recordStarts(file: string): Set<number> {
  const bytes = fs.readFileSync(file);
  const starts = new Set<number>();
  for (let at = 0; at < bytes.length; at += 8 + bytes.readUInt32LE(at)) starts.add(at);
  return starts;
}

describe('damage at every byte', () => {
  it('of the broker metadata deletes no queue, loses no message, and is reported', async () => {
    expect(messages).toEqual({ c: 2, l: 2, p: 3, s: 3 });
    const meta = path.join(dir, '_', '~meta');
    // Its records include unfinished declares followed by their finish, and a delete.
    expect(fs.readFileSync(meta).toString('latin1')).toContain('"unfinished":true');
    // A cut between two records reads as a shorter file: what it lost cannot be told.
    const boundaries = recordStarts(meta);
    expect(await damageEveryByte(meta, (at) => boundaries.has(at))).toEqual([]);
  }, 300_000);

  it.each(NAMES)(
    "of queue %s's own metadata deletes no queue, loses no message, and is reported",
    async (name) => {
      const meta = path.join(dir, name, '~meta');
      // A cut between two records reads as a shorter file: what it lost cannot be told.
      const boundaries = recordStarts(meta);
      expect(boundaries.size).toBeGreaterThan(1);
      expect(await damageEveryByte(meta, (at) => boundaries.has(at))).toEqual([]);
    },
    300_000,
  );
});
