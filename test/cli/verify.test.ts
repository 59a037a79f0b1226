import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FORMAT_VERSION } from '../../src/storage/fs/format.js';
import { runCli } from '../support/cli.js';
import {
  brokerDirectory,
  copyFixture,
  FIXTURE_VERSIONS,
  hashDirectory,
  removeDataDirs,
} from '../support/data-dirs.js';

afterAll(removeDataDirs);

/** Flips the bits of the byte at `position` of `file`. */
function flipByte(file: string, position: number): void {
  const bytes = fs.readFileSync(file);
  bytes[position] = bytes[position]! ^ 0xff;
  fs.writeFileSync(file, bytes);
}

/** Runs `mqlite verify --json` and checks that it changed nothing. */
async function verifyJson(dir: string) {
  const before = hashDirectory(dir);
  const run = await runCli(['verify', dir, '--json']);
  expect(hashDirectory(dir)).toBe(before);
  return { code: run.code, stderr: run.stderr, report: JSON.parse(run.stdout) };
}

describe('mqlite verify', () => {
  it('exits 0 on a clean directory', async () => {
    const dir = await brokerDirectory();
    const run = await runCli(['verify', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`^Checked \\d+ files, .* \\(format ${FORMAT_VERSION}\\)\nNo damage found\\.\n$`),
    );
    // Piped: no progress bar.
    expect(run.stderr).toBe('');
  });

  for (const version of FIXTURE_VERSIONS) {
    it(`reports the torn writes of the format ${version} fixture as cuts`, async () => {
      const dir = copyFixture(version);
      const { code, report } = await verifyJson(dir);
      expect(code).toBe(1);
      expect(report.formatVersion).toBe(version);
      const found = report.damage.map((d: { file: string; action: string }) => [
        path.relative(dir, d.file),
        d.action,
      ]);
      expect(found).toEqual([
        [path.join('app', '~meta'), 'cut'],
        [path.join('app', 'torn', '0000000001.seg'), 'cut'],
        [path.join('app', 'torn', '~deleted'), 'cut'],
      ]);
    });

    it(`reports a flipped byte in a sealed segment of the format ${version} fixture as refused`, async () => {
      const dir = copyFixture(version);
      const segment = path.join(dir, 'app', 'events', '0000000001.seg');
      // Inside the first record's payload (after the 24-byte file and frame headers).
      flipByte(segment, 24 + 24 + 3);
      const { code, report } = await verifyJson(dir);
      expect(code).toBe(1);
      expect(report.damage).toContainEqual(
        expect.objectContaining({
          file: segment,
          position: 24,
          action: 'refuse',
          reason: 'a record fails its checksum',
          namespace: 'app',
          log: 'events',
        }),
      );
      const text = await runCli(['verify', dir]);
      expect(text.stdout).toContain(
        `DAMAGED ${path.join('app', 'events', '0000000001.seg')} bytes 24..`,
      );
      expect(text.stdout).toContain('a reopen refuses the log (MQLITE_CORRUPTION)');
    });
  }

  it('reports a truncated tail as a cut, with its byte range', async () => {
    const dir = await brokerDirectory();
    const segment = path.join(dir, 'events', 'messages', '0000000001.seg');
    const size = fs.statSync(segment).size;
    fs.truncateSync(segment, size - 5);
    const { code, report } = await verifyJson(dir);
    expect(code).toBe(1);
    expect(report.clean).toBe(false);
    expect(report.damage).toEqual([
      expect.objectContaining({
        file: segment,
        end: size - 5,
        action: 'cut',
        reason: 'a record is cut short',
      }),
    ]);
  });

  it('reports damaged metadata records as skipped', async () => {
    const dir = copyFixture(3);
    const meta = path.join(dir, 'app', '~meta');
    flipByte(meta, 12);
    const { code, report } = await verifyJson(dir);
    expect(code).toBe(1);
    expect(report.damage).toContainEqual(
      expect.objectContaining({ file: meta, position: 0, action: 'skip' }),
    );
  });

  it('reports a damaged index as rebuilt, nothing lost', async () => {
    const dir = copyFixture(3);
    const index = path.join(dir, 'app', 'events', '0000000002.idx');
    flipByte(index, 30);
    const { report } = await verifyJson(dir);
    expect(report.damage).toContainEqual(
      expect.objectContaining({ file: index, action: 'rebuild' }),
    );
  });

  it("reports a priority queue's missing level and a stream's missing segment as dropped", async () => {
    const dir = await brokerDirectory();
    const level = path.join(dir, 'urgent', 'prio.005');
    fs.rmSync(level, { recursive: true });
    const segment = path.join(dir, 'events', 'messages', '0000000001.seg');
    fs.rmSync(segment);
    const { code, report } = await verifyJson(dir);
    expect(code).toBe(1);
    expect(report.damage).toEqual([
      expect.objectContaining({
        file: segment,
        action: 'drop',
        reason: 'the segment is missing: the records it held are lost',
        namespace: 'events',
        log: 'messages',
      }),
      expect.objectContaining({
        file: level,
        action: 'drop',
        reason: 'the log is missing: the records it held are lost',
        namespace: 'urgent',
        log: 'prio.005',
      }),
    ]);
    const text = await runCli(['verify', dir]);
    expect(text.stdout).toContain(
      `DAMAGED ${path.join('urgent', 'prio.005')}: the log is missing: the records it held are lost; a reopen reports the loss (MQLITE_DATA_LOSS) and opens the queue with what remains`,
    );
  });

  it("reports a log's missing deletion marks", async () => {
    const dir = await brokerDirectory();
    const marks = path.join(dir, 'jobs', 'prio.000', '~deleted');
    fs.rmSync(marks);
    const { report } = await verifyJson(dir);
    expect(report.damage).toEqual([
      expect.objectContaining({
        file: marks,
        action: 'drop',
        reason: 'the deletion marks are missing: records deleted before may be delivered again',
      }),
    ]);
  });

  it('reports a missing list of logs as relisted', async () => {
    const dir = await brokerDirectory();
    const list = path.join(dir, 'urgent', '~logs');
    fs.rmSync(list);
    const { report } = await verifyJson(dir);
    expect(report.damage).toEqual([
      expect.objectContaining({ file: list, action: 'relist', namespace: 'urgent' }),
    ]);
  });

  it('warns that a live process holds the directory, and still checks it', async () => {
    const dir = await brokerDirectory();
    fs.writeFileSync(path.join(dir, 'LOCK'), String(process.pid));
    const { code, stderr } = await verifyJson(dir);
    expect(code).toBe(0);
    expect(stderr).toContain(`process ${process.pid} holds`);
  });
});
