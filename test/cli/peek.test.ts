import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { AmqpTimestamp } from '../../src/message/timestamp.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { runCli } from '../support/cli.js';
import {
  brokerDirectory,
  copyFixture,
  FIXTURE_VERSIONS,
  hashDirectory,
  removeDataDirs,
} from '../support/data-dirs.js';

afterAll(removeDataDirs);

describe('mqlite peek', () => {
  it('prints messages with properties, text bodies and hex bodies, changing nothing', async () => {
    const dir = await brokerDirectory();
    const before = hashDirectory(dir);
    const run = await runCli(['peek', dir, 'jobs', '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      queue: 'jobs',
      messages: 3,
      shown: [
        {
          log: 'prio.000',
          offset: 1,
          exchange: 'orders',
          routingKey: 'new',
          properties: { contentType: 'text/plain' },
          encoding: 'utf8',
          body: 'order 1',
        },
        { offset: 2, properties: { headers: { attempt: 1 } }, body: '{"order":2}' },
        { offset: 3, encoding: 'hex', body: 'ff00fe' },
      ],
    });
    expect(hashDirectory(dir)).toBe(before);
  });

  it('prints a timestamp beyond a Date as its seconds, and one within as an ISO string', async () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mqlite-peek-')), 'data');
    const broker = await Broker.open({ storage: fsStorage({ dir }) });
    const q = await broker.queue('stamped');
    await q.publish('far', {
      timestamp: new AmqpTimestamp(1n << 62n),
      headers: { at: new AmqpTimestamp(-(2n ** 63n)), near: new Date(0) },
    });
    await broker.close();
    const run = await runCli(['peek', dir, 'stamped', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).shown[0].properties).toEqual({
      timestamp: { seconds: String(1n << 62n) },
      headers: { at: { seconds: String(-(2n ** 63n)) }, near: '1970-01-01T00:00:00.000Z' },
    });
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });

  it('starts at --from and stops at --limit, as text', async () => {
    const dir = await brokerDirectory();
    const before = hashDirectory(dir);
    const run = await runCli(['peek', dir, 'events', '--from', '2', '--limit', '2']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^events: 5 messages, 2 shown\n/);
    expect(run.stdout).toContain('#2  messages  stored ');
    expect(run.stdout).toContain("  exchange '', routing key 'events'\n  event 2\n");
    expect(run.stdout).toContain('  event 3\n');
    expect(run.stdout).not.toContain('event 4');
    // Reading a stream stores no consumer offset.
    expect(hashDirectory(dir)).toBe(before);
  });

  it('lists a priority queue highest level first, as it delivers', async () => {
    const dir = await brokerDirectory();
    const run = await runCli(['peek', dir, 'urgent', '--json']);
    const bodies = JSON.parse(run.stdout).shown.map((m: { body: string }) => m.body);
    expect(bodies).toEqual(['high', 'low']);
  });

  for (const version of FIXTURE_VERSIONS) {
    it(`reads the records of the format ${version} fixture without its recovery cut`, async () => {
      const dir = copyFixture(version);
      const before = hashDirectory(dir);
      const run = await runCli(['peek', dir, 'app', '--limit', '100', '--json']);
      expect(run.code).toBe(0);
      const shown = JSON.parse(run.stdout).shown as { log: string; offset: number; body: string }[];
      expect(shown.filter((m) => m.log === 'events').map((m) => m.body)).toEqual([
        'first record .......',
        'ünïcødé ✓ ..........',
        'fourth record ......',
        'sixth record .......',
        'seventh record .....',
      ]);
      // The torn record, never confirmed, is not read.
      expect(shown.filter((m) => m.log === 'torn').map((m) => m.body)).toEqual(['t2', 't3']);
      expect(hashDirectory(dir)).toBe(before);
    });
  }

  it('refuses a directory a live process holds, naming the pid', async () => {
    const dir = await brokerDirectory();
    fs.writeFileSync(path.join(dir, 'LOCK'), String(process.pid));
    const before = hashDirectory(dir);
    const run = await runCli(['peek', dir, 'jobs']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`in use by process ${process.pid}`);
    expect(run.stdout).toBe('');
    expect(hashDirectory(dir)).toBe(before);
  });

  it('exits 1 naming an unknown queue', async () => {
    const dir = await brokerDirectory();
    const run = await runCli(['peek', dir, 'nope']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("no queue 'nope'");
  });

  it('exits 2 on a bad --from', async () => {
    const run = await runCli(['peek', '.', 'jobs', '--from', 'last']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--from must be 'first' or an offset");
  });
});
