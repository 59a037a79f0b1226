import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { readFile } from '../../src/storage/fs/io.js';
import { overlayIo } from '../../src/storage/fs/overlay-io.js';

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function tree(at: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(at, { recursive: true }) as string[]) {
    const file = path.join(at, name);
    if (fs.statSync(file).isFile()) out[name] = fs.readFileSync(file, 'utf8');
  }
  return out;
}

test('writes, truncations, renames and removals are seen through the overlay and never reach the disk', () => {
  dir = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-overlay-'));
  fs.mkdirSync(path.join(dir, 'sub'));
  fs.writeFileSync(path.join(dir, 'a'), 'hello world');
  fs.writeFileSync(path.join(dir, 'sub', 'b'), 'bee');
  const before = tree(dir);
  const io = overlayIo();

  const fd = io.openSync(path.join(dir, 'a'), 'r+');
  io.writeSync(fd, Buffer.from('J'), 0, 1, 0);
  io.ftruncateSync(fd, 5);
  expect(io.sizeSync(fd)).toBe(5);
  io.closeSync(fd);
  expect(readFile(io, path.join(dir, 'a'))?.toString()).toBe('Jello');

  const created = io.openSync(path.join(dir, 'sub', 'c.tmp'), 'w');
  io.writeSync(created, Buffer.from('new'), 0, 3, 0);
  io.closeSync(created);
  io.renameSync(path.join(dir, 'sub', 'c.tmp'), path.join(dir, 'sub', 'c'));
  io.unlinkSync(path.join(dir, 'sub', 'b'));
  io.mkdirSync(path.join(dir, 'made', 'deep'));

  expect(io.readdirSync(path.join(dir, 'sub'))).toEqual(['c']);
  expect(io.readdirSync(dir)).toEqual(['a', 'made', 'sub']);
  expect(io.isDirectorySync(path.join(dir, 'made', 'deep'))).toBe(true);
  expect(io.existsSync(path.join(dir, 'sub', 'b'))).toBe(false);
  expect(readFile(io, path.join(dir, 'sub', 'c'))?.toString()).toBe('new');
  expect(() => io.openSync(path.join(dir, 'sub', 'b'), 'r')).toThrow(/ENOENT/);

  io.rmSync(path.join(dir, 'sub'));
  expect(io.existsSync(path.join(dir, 'sub', 'c'))).toBe(false);
  expect(io.readdirSync(dir)).toEqual(['a', 'made']);

  expect(tree(dir)).toEqual(before);
  expect(fs.existsSync(path.join(dir, 'made'))).toBe(false);
});
