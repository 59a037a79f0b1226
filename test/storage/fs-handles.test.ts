import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { type FsIo, fsStorage, nodeIo } from '../../src/storage/fs/index.js';
import { testRecordCodec } from '../../src/testing/index.js';
import { bundled } from '../support/bundle.js';

const manyQueues = bundled(new URL('./fixtures/many-queues.ts', import.meta.url));
const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-handles-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true, maxRetries: 5 }));

/** Runs `node script args` under `ulimit -n limit`; resolves with its exit code and output. */
async function underLimit(
  limit: number,
  script: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const command = `ulimit -n ${limit} && exec "$0" "$@"`;
  const child = spawn('bash', ['-c', command, process.execPath, script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

/** Descriptors this process has open. */
const openDescriptors = () => fs.readdirSync('/proc/self/fd').length;

describe('file descriptors', () => {
  test.skipIf(process.platform !== 'linux')(
    'a broker holds more durable queues of every kind than its descriptor limit, and reopens them',
    async () => {
      // 4 kinds x 400 queues, each with its metadata, a segment and deletion marks: 4,800 files
      // under a limit of 256 descriptors.
      const run = await underLimit(256, await manyQueues, [path.join(root, 'many'), '400']);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ taken: 1600 });
    },
    600_000,
  );

  test.skipIf(process.platform !== 'linux')(
    'the descriptors an adapter keeps open stay within maxOpenFiles however many logs it has',
    async () => {
      const storage = fsStorage({ dir: path.join(root, 'bounded'), maxOpenFiles: 8 });
      const before = openDescriptors();
      const logs = [];
      for (let i = 0; i < 40; i++) {
        const ns = await storage.namespace(`ns-${i}`);
        const log = await ns.openLog('log', testRecordCodec);
        log.append(`record ${i}`, 0);
        await log.sync();
        logs.push(log);
      }
      expect(openDescriptors() - before).toBeLessThanOrEqual(8);
      for (const [i, log] of logs.entries()) expect(log.get(1)).toBe(`record ${i}`);
      await storage.close();
    },
  );

  test('a descriptor closed with writes not yet fsynced is fsynced before it closes', async () => {
    const calls: { op: string; file: string }[] = [];
    const files = new Map<number, string>();
    const io: FsIo = {
      ...nodeIo,
      openSync(file, flags) {
        const fd = nodeIo.openSync(file, flags);
        files.set(fd, file);
        return fd;
      },
      renameSync(from, to) {
        nodeIo.renameSync(from, to);
        for (const [fd, file] of files) if (file === from) files.set(fd, to);
      },
      writeSync(fd, ...rest) {
        calls.push({ op: 'write', file: files.get(fd)! });
        return nodeIo.writeSync(fd, ...rest);
      },
      fsyncSync(fd) {
        calls.push({ op: 'fsync', file: files.get(fd)! });
        nodeIo.fsyncSync(fd);
      },
      closeSync(fd) {
        calls.push({ op: 'close', file: files.get(fd)! });
        nodeIo.closeSync(fd);
      },
    };
    const storage = fsStorage({ dir: path.join(root, 'evicted'), maxOpenFiles: 1, io });
    const first = await (await storage.namespace('a')).openLog('log', testRecordCodec);
    await first.sync();
    first.append('written, not yet fsynced', 0);
    // The write reaches the OS at the end of the tick; nobody waits for its fsync.
    await new Promise((resolve) => setImmediate(resolve));
    const segment = calls.findLast((call) => call.op === 'write')!.file;
    expect(segment).toMatch(/\.seg$/);
    // Another log takes the one descriptor.
    await (await storage.namespace('b')).openLog('log', testRecordCodec);
    const ofSegment = calls.filter((call) => call.file === segment).map((call) => call.op);
    expect(ofSegment.slice(ofSegment.lastIndexOf('write'))).toEqual(['write', 'fsync', 'close']);
    expect(first.get(1)).toBe('written, not yet fsynced');
    await storage.close();
  });
});
