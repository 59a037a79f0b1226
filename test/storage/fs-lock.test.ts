/**
 * The data directory lock (src/storage/fs/lock.ts), between adapters of one process and between
 * processes started at the same instant.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { afterAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ResourceLockedError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { bundled } from '../support/bundle.js';
import { openFsStorage } from '../support/open-fs.js';

// Bundled: started through a TypeScript loader, each contender takes seconds on a loaded machine.
const contender = await bundled(new URL('./fixtures/lock-contender.ts', import.meta.url));
const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-lock-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => path.join(root, `d${dirs++}`);
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid!;
const lockFile = (dir: string) => path.join(dir, 'LOCK');

/** A child process opening and releasing directories on command. */
class Contender {
  readonly #child: ChildProcess;
  readonly #lines: Interface;
  readonly #waiting: Array<{ resolve(line: string): void; reject(error: Error): void }> = [];

  constructor() {
    this.#child = spawn(process.execPath, [contender], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.#lines = createInterface({ input: this.#child.stdout! });
    this.#lines.on('line', (line) => this.#waiting.shift()?.resolve(line));
    this.#child.on('exit', (code) => {
      for (const waiter of this.#waiting.splice(0)) {
        waiter.reject(new Error(`contender exited with ${code}`));
      }
    });
  }

  get pid(): number {
    return this.#child.pid!;
  }

  send(command: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#child.stdin!.write(`${command}\n`);
    });
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.#child.once('exit', () => resolve());
      this.#child.stdin!.end();
    });
  }
}

describe('fs lock: between processes', () => {
  test('of processes opening one directory at the same instant exactly one wins, every trial', async () => {
    const contenders = Array.from({ length: 4 }, () => new Contender());
    try {
      const trials = [
        ...Array.from({ length: 30 }, () => 'fresh'),
        ...Array.from({ length: 30 }, () => 'stale'),
      ];
      const dead = deadPid();
      for (const kind of trials) {
        const dir = freshDir();
        if (kind === 'stale') {
          fs.mkdirSync(dir);
          fs.writeFileSync(lockFile(dir), String(dead));
        }
        // Every contender opens when the clock reads `at`.
        const at = Date.now() + 30;
        const answers = await Promise.all(contenders.map((c) => c.send(`open ${at} ${dir}`)));
        const winners = contenders.filter((_, i) => answers[i] === 'won');
        expect({ kind, winners: winners.length }).toEqual({ kind, winners: 1 });
        const winner = winners[0]!;
        for (const answer of answers.filter((a) => a !== 'won')) {
          expect(answer).toMatch(
            new RegExp(`^lost MQLITE_RESOURCE_LOCKED .* locked by process ${winner.pid}\\b`),
          );
        }
        expect(fs.readFileSync(lockFile(dir), 'utf8')).toBe(String(winner.pid));
        // Nothing but the marker, the lock and nothing left over from the contest.
        expect(fs.readdirSync(dir).sort()).toEqual(['FORMAT', 'LOCK']);
        await winner.send('release');
        expect(fs.readdirSync(dir)).toEqual(['FORMAT']);
      }
    } finally {
      await Promise.all(contenders.map((c) => c.stop()));
    }
  }, 120_000);

  test('an empty or garbled LOCK of a directory in use is not taken over', async () => {
    const holder = new Contender();
    try {
      for (const content of ['', 'garbage', '12 34']) {
        const dir = freshDir();
        expect(await holder.send(`open 0 ${dir}`)).toBe('won');
        fs.writeFileSync(lockFile(dir), content);
        await expect(openFsStorage({ dir })).rejects.toThrow(ResourceLockedError);
        await expect(openFsStorage({ dir })).rejects.toThrow(
          /names no process \(empty or garbled\)/,
        );
        expect(fs.readFileSync(lockFile(dir), 'utf8')).toBe(content);
        expect(await holder.send('release')).toBe('released');
      }
    } finally {
      await holder.stop();
    }
  }, 60_000);
});

describe('fs lock: taking over', () => {
  test('a lock naming a process that died is taken over', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    fs.writeFileSync(lockFile(dir), String(deadPid()));
    const adapter = await openFsStorage({ dir });
    expect(fs.readFileSync(lockFile(dir), 'utf8')).toBe(String(process.pid));
    await adapter.close();
    expect(fs.existsSync(lockFile(dir))).toBe(false);
  });

  test('a takeover left half-done by a taker that died is completed, its break file removed', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    const [holder, taker] = [deadPid(), deadPid()];
    fs.writeFileSync(lockFile(dir), String(holder));
    fs.writeFileSync(`${lockFile(dir)}.break-${holder}`, String(taker));
    const adapter = await openFsStorage({ dir });
    expect(fs.readFileSync(lockFile(dir), 'utf8')).toBe(String(process.pid));
    expect(fs.readdirSync(dir).sort()).toEqual(['FORMAT', 'LOCK']);
    await adapter.close();
  });

  test('a takeover under way by a live process is left to it', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    const holder = deadPid();
    fs.writeFileSync(lockFile(dir), String(holder));
    fs.writeFileSync(`${lockFile(dir)}.break-${holder}`, String(process.ppid));
    await expect(openFsStorage({ dir })).rejects.toThrow(
      expect.objectContaining({
        code: 'MQLITE_RESOURCE_LOCKED',
        message: expect.stringContaining(`locked by process ${process.ppid}`),
      }),
    );
    expect(fs.readFileSync(lockFile(dir), 'utf8')).toBe(String(holder));
    expect(fs.existsSync(path.join(dir, 'FORMAT'))).toBe(false);
  });
});

describe('fs lock: in one process', () => {
  test('fsStorage() touches nothing: the directory is made and locked when a broker opens it', async () => {
    const dir = path.join(freshDir(), 'data');
    const first = fsStorage({ dir });
    const second = fsStorage({ dir });
    expect(fs.existsSync(dir)).toBe(false);
    const broker = await Broker.open({ storage: first });
    expect(fs.readFileSync(lockFile(dir), 'utf8')).toBe(String(process.pid));
    // The second broker on the same directory is refused, and closes the adapter it was given.
    await expect(Broker.open({ storage: second })).rejects.toThrow(
      expect.objectContaining({
        code: 'MQLITE_RESOURCE_LOCKED',
        message: expect.stringContaining('already open in this process'),
      }),
    );
    await broker.close();
    expect(fs.existsSync(lockFile(dir))).toBe(false);
    const again = await Broker.open({ storage: fsStorage({ dir }) });
    await again.close();
  });

  test('an adapter closed before use never takes the lock', async () => {
    const dir = freshDir();
    const unused = fsStorage({ dir });
    await unused.close();
    expect(fs.existsSync(dir)).toBe(false);
    await expect(unused.listNamespaces()).rejects.toThrow(
      expect.objectContaining({ code: 'MQLITE_CLOSED' }),
    );
  });

  test('one directory reached through a symlink is the same directory', async () => {
    const dir = freshDir();
    const link = `${dir}-link`;
    const first = await openFsStorage({ dir });
    fs.symlinkSync(dir, link);
    await expect(openFsStorage({ dir: link })).rejects.toThrow(
      expect.objectContaining({
        code: 'MQLITE_RESOURCE_LOCKED',
        message: expect.stringContaining('already open in this process'),
      }),
    );
    await expect(openFsStorage({ dir: path.join(link, '.') })).rejects.toThrow(ResourceLockedError);
    await first.close();
    const second = await openFsStorage({ dir: link });
    await second.close();
  });

  test('nothing is written to a directory before its lock is taken', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    fs.writeFileSync(lockFile(dir), String(process.ppid));
    await expect(openFsStorage({ dir })).rejects.toThrow(ResourceLockedError);
    expect(fs.readdirSync(dir)).toEqual(['LOCK']);
  });
});
