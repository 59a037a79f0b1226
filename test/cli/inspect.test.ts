import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { FORMAT_VERSION } from '../../src/storage/fs/format.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { runCli } from '../support/cli.js';
import {
  brokerDirectory,
  copyFixture,
  FIXTURE_VERSIONS,
  hashDirectory,
  removeDataDirs,
  tempDir,
} from '../support/data-dirs.js';

afterAll(removeDataDirs);

describe('mqlite inspect', () => {
  it('lists every queue kind with its arguments, counts, offsets, keys and segment files', async () => {
    const dir = await brokerDirectory();
    const before = hashDirectory(dir);
    const run = await runCli(['inspect', dir, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({
      formatVersion: FORMAT_VERSION,
      holder: null,
      namespaces: [],
      recovery: [],
    });
    const byName = Object.fromEntries(report.queues.map((q: { name: string }) => [q.name, q]));
    expect(Object.keys(byName)).toEqual(['events', 'jobs', 'prices', 'urgent']);
    expect(byName.jobs).toMatchObject({ kind: 'classic', durable: true, messages: 3 });
    expect(byName.urgent).toMatchObject({
      kind: 'priority',
      arguments: { 'x-max-priority': 5 },
      messages: 2,
    });
    expect(byName.urgent.logs.map((l: { name: string }) => l.name)).toEqual([
      'prio.005',
      'prio.001',
    ]);
    expect(byName.events).toMatchObject({
      kind: 'stream',
      messages: 5,
      offsets: [{ tag: 'reader', offset: expect.any(Number) }],
    });
    expect(byName.prices).toMatchObject({ kind: 'lvq', messages: 3, keys: 3 });
    const [segment] = byName.events.logs[0].segments;
    expect(segment).toMatchObject({ firstOffset: 1, lastOffset: 5, records: 5, deleted: 0 });
    expect(segment.fileBytes).toBe(fs.statSync(segment.file).size);
    expect(report.exchanges).toEqual([
      expect.objectContaining({
        name: 'orders',
        type: 'direct',
        bindings: [expect.objectContaining({ destination: 'jobs', routingKey: 'new' })],
      }),
    ]);
    expect(hashDirectory(dir)).toBe(before);
  });

  it('prints the same as text', async () => {
    const dir = await brokerDirectory();
    const run = await runCli(['inspect', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Data directory ${dir} (format ${FORMAT_VERSION}, not in use)`);
    expect(run.stdout).toMatch(/ {2}prices {2}lvq, durable\n.*\n {4}messages {3}3 \(/);
    expect(run.stdout).toContain('    keys       3');
    expect(run.stdout).toMatch(/ {4}offset {5}reader: \d+/);
    expect(run.stdout).toContain(`      ${path.join('events', 'messages', '0000000001.seg')}  `);
    expect(run.stdout).toContain("  orders  direct, durable\n    → jobs  routing key 'new'");
  });

  it('lists the messages a durable delayed exchange holds and when the first falls due', async () => {
    const dir = path.join(tempDir(), 'delayed');
    const clock = new ManualClock(Date.UTC(2024, 0, 1));
    const broker = await Broker.open({ storage: fsStorage({ dir }), clock });
    const later = await broker.exchange('later', 'x-delayed-message', {
      arguments: { 'x-delayed-type': 'direct' },
    });
    for (const [delay, deliveryMode] of [
      [7_200_000, 2],
      [3_600_000, 2],
      [60_000, 1],
    ] as const) {
      await later.publish('job', { deliveryMode, headers: { 'x-delay': delay } });
    }
    await broker.close();
    const before = hashDirectory(dir);
    const report = JSON.parse((await runCli(['inspect', dir, '--json'])).stdout);
    expect(report.exchanges).toEqual([
      expect.objectContaining({
        name: 'later',
        type: 'x-delayed-message',
        delayed: { messages: 2, nextDue: Date.UTC(2024, 0, 1, 1) },
      }),
    ]);
    const text = (await runCli(['inspect', dir])).stdout;
    expect(text).toContain(
      '  later  x-delayed-message, durable\n    delayed    2 messages, next due 2024-01-01T01:00:00.000Z',
    );
    expect(hashDirectory(dir)).toBe(before);
  });

  it('shows a consistent-hash exchange with its arguments and weighted bindings', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'mqlite-inspect-chx-'));
    try {
      {
        await using broker = await Broker.open({ storage: fsStorage({ dir }) });
        await broker.exchange('orders', 'x-consistent-hash', { arguments: { 'x-hash-on': 'c' } });
        await (await broker.queue('p0')).bind('orders', '100');
      }
      const run = await runCli(['inspect', dir]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(
        `  orders  x-consistent-hash, durable\n    arguments  {"x-hash-on":"c"}\n    → p0  routing key '100'`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  for (const version of FIXTURE_VERSIONS) {
    it(`reads the format ${version} fixture as a reopen would, changing nothing`, async () => {
      const dir = copyFixture(version);
      const before = hashDirectory(dir);
      const run = await runCli(['inspect', dir, '--json']);
      expect(run.code).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.formatVersion).toBe(version);
      const app = report.namespaces.find((n: { name: string }) => n.name === 'app');
      const events = app.logs.find((l: { name: string }) => l.name === 'events');
      expect(events).toMatchObject({ firstOffset: 1, nextOffset: 8, messages: 5 });
      expect(events.segments).toHaveLength(3);
      // The torn tail a reopen cuts: the record never confirmed is not counted.
      const torn = app.logs.find((l: { name: string }) => l.name === 'torn');
      expect(torn).toMatchObject({ nextOffset: 4 });
      expect(report.recovery).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: 'torn-write', file: expect.stringContaining('torn') }),
        ]),
      );
      expect(hashDirectory(dir)).toBe(before);
    });
  }

  it('reads a directory a live process holds, and says which', async () => {
    const dir = await brokerDirectory();
    fs.writeFileSync(path.join(dir, 'LOCK'), String(process.pid));
    const before = hashDirectory(dir);
    const run = await runCli(['inspect', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`held by pid ${process.pid}`);
    expect(hashDirectory(dir)).toBe(before);
  });

  it('exits 2 without a directory', async () => {
    const run = await runCli(['inspect']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Usage: mqlite inspect');
  });
});
