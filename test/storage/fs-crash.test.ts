import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { fsStorage } from '../../src/storage/fs/index.js';
import { faultyIo, testRecordCodec } from '../../src/testing/index.js';
import { bundled } from '../support/bundle.js';

const writer = bundled(new URL('./fixtures/crash-writer.ts', import.meta.url));
const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-crash-'));
/** Writers not yet reaped: a test that fails or times out must not leave one writing into root. */
const running = new Set<ChildProcess>();
afterAll(async () => {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise((resolve) => {
          child.once('close', resolve);
          child.kill('SIGKILL');
        }),
    ),
  );
  fs.rmSync(root, { recursive: true, force: true, maxRetries: 5 });
});
/**
 * Each run starts a process (from a bundle: no TypeScript loader), which on a loaded machine
 * takes seconds: the limit is for a hung writer, not a speed check.
 */
const CRASH_TEST_TIMEOUT = 180_000;

/** Same as the writer's: the content expected at each offset. */
const recordFor = (offset: number) => `r-${offset}-${'x'.repeat(offset % 61)}`;

/**
 * Runs the writer until it has confirmed at least one sync, lets it go on for a random while,
 * kills it with SIGKILL and returns the highest offset it reported as synced.
 */
async function runAndKill(dir: string, policy: string): Promise<number> {
  const script = await writer;
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [script, dir, policy], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let confirmed = 0;
    let pending = '';
    let stderr = '';
    let killScheduled = false;
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) confirmed = Math.max(confirmed, Number(line));
      if (!killScheduled) setTimeout(() => child.kill('SIGKILL'), Math.random() * 40);
      killScheduled = true;
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer exited by itself: ${stderr}`));
      // Lines written before the kill may still sit in the pipe: 'close' delivers them.
    });
    child.on('close', () => {
      running.delete(child);
      for (const line of pending.split('\n'))
        if (line) confirmed = Math.max(confirmed, Number(line));
      resolve(confirmed);
    });
  });
}

/**
 * Reopens the log as a restarted process would and checks every record. It then "crashes" the
 * checker too (nothing written on close), so the next writer again starts from a crashed state.
 */
async function check(dir: string, confirmed: number): Promise<number> {
  const faults = faultyIo();
  const storage = fsStorage({ dir, io: faults.io, fsync: 'never' });
  const log = await (await storage.namespace('crash')).openLog('log', testRecordCodec);
  const c = log.cursor();
  let expected = 1;
  while (c.next()) {
    if (c.offset !== expected || c.record !== recordFor(expected)) {
      throw new Error(`offset ${expected}: found ${c.offset} '${c.record.slice(0, 20)}'`);
    }
    expected++;
  }
  expect(log.nextOffset).toBe(expected);
  expect(expected - 1).toBeGreaterThanOrEqual(confirmed);
  faults.crash();
  await storage.close().catch(() => {});
  return expected - 1;
}

describe('fs storage survives SIGKILL', () => {
  for (const [policy, kills] of [
    ['always', 5],
    ['interval', 4],
  ] as const) {
    test.concurrent(
      `every append whose sync resolved is there once and in order (fsync ${policy})`,
      async () => {
        const dir = path.join(root, policy);
        let stored = 0;
        for (let i = 0; i < kills; i++) {
          const confirmed = await runAndKill(dir, policy);
          expect(confirmed).toBeGreaterThan(0);
          stored = await check(dir, Math.max(confirmed, stored));
        }
        expect(stored).toBeGreaterThan(0);
      },
      CRASH_TEST_TIMEOUT,
    );
  }
});
