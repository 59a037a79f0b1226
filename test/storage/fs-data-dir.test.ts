import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { StorageError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { openFsStorage } from '../support/open-fs.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-dir-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('fs storage: the data directory', () => {
  test('an empty dir is refused rather than taken as the working directory', () => {
    expect(() => fsStorage({ dir: '' })).toThrow(TypeError);
    expect(() => fsStorage({ dir: '' })).toThrow(/dir is empty/);
  });

  test('missing parents are created', async () => {
    const dir = path.join(root, 'a', 'b', 'c');
    const storage = await openFsStorage({ dir });
    expect(fs.statSync(dir).isDirectory()).toBe(true);
    await storage.close();
  });

  test('a parent that is a file is refused, naming it', async () => {
    const file = path.join(root, 'file');
    fs.writeFileSync(file, 'x');
    const dir = path.join(file, 'data');
    await expect(openFsStorage({ dir })).rejects.toThrow(StorageError);
    await expect(openFsStorage({ dir })).rejects.toThrow(
      expect.objectContaining({
        code: 'MQLITE_STORAGE',
        replyCode: 541,
        file,
        message: `INTERNAL_ERROR - cannot create data directory '${dir}': '${file}' is not a directory`,
      }),
    );
  });

  test.runIf(fs.existsSync('/proc/self'))(
    'a directory the file system will not create fails at once (no endless retry in /proc)',
    async () => {
      await expect(openFsStorage({ dir: '/proc/nope' })).rejects.toThrow(
        expect.objectContaining({
          code: 'MQLITE_STORAGE',
          ioCode: 'ENOENT',
          file: '/proc/nope',
          message: expect.stringContaining("mkdir '/proc/nope' failed (ENOENT)"),
        }),
      );
    },
  );
});
