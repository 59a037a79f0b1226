/**
 * File operations that read the real file system and keep every change in memory: the adapter
 * runs its own recovery over them (a torn tail cut, an index rebuilt, `~meta` rewritten) and sees
 * the result, while not a byte of the directory changes. This is how `mqlite inspect` and `mqlite
 * peek` read a directory exactly as a reopen would, without writing to it.
 *
 * A file is copied into memory the first time it is written or truncated (or created); renames,
 * unlinks and new directories are recorded by path. Reads of a file nobody wrote go to the disk.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FsIo } from './io.js';

/** A path as the overlay sees it: replaced by bytes in memory, or removed. */
type Entry = { readonly kind: 'file'; data: Buffer } | { readonly kind: 'gone' };

interface Open {
  readonly path: string;
  /** The real descriptor while the file is read from the disk; -1 once copied into memory. */
  fd: number;
  /** The file's bytes once copied (shared with the entry of its path). */
  file: { data: Buffer } | undefined;
}

/** A new overlay over the real file system (see the header). */
export function overlayIo(): FsIo {
  const entries = new Map<string, Entry>();
  const dirs = new Set<string>();
  const opened = new Map<number, Open>();
  // Memory-only descriptors, far from the real ones so they never collide.
  let nextFd = 1 << 24;

  const entryOf = (file: string) => entries.get(path.resolve(file));
  const exists = (file: string): boolean => {
    const entry = entryOf(file);
    if (entry) return entry.kind === 'file';
    for (let at = path.resolve(file); ; at = path.dirname(at)) {
      if (entries.get(at)?.kind === 'gone') return false;
      if (path.dirname(at) === at) break;
    }
    return dirs.has(path.resolve(file)) || fs.existsSync(file);
  };
  const open = (fd: number): Open => {
    const o = opened.get(fd);
    if (!o) throw Object.assign(new Error(`EBADF: bad file descriptor`), { code: 'EBADF' });
    return o;
  };
  /** Copies an open file into memory, so it can be changed there. */
  const own = (o: Open): { data: Buffer } => {
    if (o.file) return o.file;
    const data = fs.readFileSync(o.fd);
    fs.closeSync(o.fd);
    o.fd = -1;
    const entry: Entry = { kind: 'file', data };
    entries.set(o.path, entry);
    o.file = entry;
    return entry;
  };
  const enoent = (file: string) =>
    Object.assign(new Error(`ENOENT: no such file or directory, '${file}'`), { code: 'ENOENT' });

  return {
    openSync(file, flags) {
      const at = path.resolve(file);
      const creates = /[wa]/.test(flags);
      const entry = entryOf(at);
      if (flags.includes('x') && exists(at)) {
        throw Object.assign(new Error(`EEXIST: file already exists, '${file}'`), {
          code: 'EEXIST',
        });
      }
      let o: Open;
      if (creates && (flags.startsWith('w') || !exists(at))) {
        const created: Entry = { kind: 'file', data: Buffer.alloc(0) };
        entries.set(at, created);
        o = { path: at, fd: -1, file: created };
      } else if (entry?.kind === 'file') o = { path: at, fd: -1, file: entry };
      else if (entry?.kind === 'gone' || !exists(at)) throw enoent(file);
      else o = { path: at, fd: fs.openSync(at, 'r'), file: undefined };
      const fd = nextFd++;
      opened.set(fd, o);
      return fd;
    },
    closeSync(fd) {
      const o = open(fd);
      opened.delete(fd);
      if (o.fd >= 0) fs.closeSync(o.fd);
    },
    writeSync(fd, buffer, offset, length, position) {
      const file = own(open(fd));
      if (file.data.length < position + length) {
        const grown = Buffer.alloc(position + length);
        file.data.copy(grown);
        file.data = grown;
      }
      file.data.set(buffer.subarray(offset, offset + length), position);
      return length;
    },
    readSync(fd, buffer, offset, length, position) {
      const o = open(fd);
      if (!o.file) return fs.readSync(o.fd, buffer, offset, length, position);
      const bytes = o.file.data.subarray(position, position + length);
      buffer.set(bytes, offset);
      return bytes.length;
    },
    fsync: (_fd, callback) => queueMicrotask(() => callback(null)),
    fsyncSync: () => {},
    ftruncateSync(fd, length) {
      const file = own(open(fd));
      const data = Buffer.alloc(length);
      file.data.copy(data, 0, 0, Math.min(length, file.data.length));
      file.data = data;
    },
    sizeSync(fd) {
      const o = open(fd);
      return o.file ? o.file.data.length : fs.fstatSync(o.fd).size;
    },
    renameSync(from, to) {
      const source = path.resolve(from);
      const entry = entryOf(source);
      if (entry?.kind === 'gone' || !exists(source)) throw enoent(from);
      const data = entry?.kind === 'file' ? entry.data : fs.readFileSync(source);
      entries.set(path.resolve(to), { kind: 'file', data });
      entries.set(source, { kind: 'gone' });
    },
    unlinkSync(file) {
      if (!exists(file)) throw enoent(file);
      entries.set(path.resolve(file), { kind: 'gone' });
    },
    mkdirSync(dir) {
      for (let at = path.resolve(dir); !exists(at); at = path.dirname(at)) {
        dirs.add(at);
        if (entries.get(at)?.kind === 'gone') entries.delete(at);
      }
    },
    readdirSync(dir) {
      const at = path.resolve(dir);
      if (!exists(at)) return [];
      let names: string[] = [];
      try {
        names = fs.readdirSync(at);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      const all = new Set(
        names.filter((name) => entries.get(path.join(at, name))?.kind !== 'gone'),
      );
      for (const [file, entry] of entries) {
        if (entry.kind === 'file' && path.dirname(file) === at) all.add(path.basename(file));
      }
      for (const created of dirs) if (path.dirname(created) === at) all.add(path.basename(created));
      return [...all].sort();
    },
    rmSync(file) {
      const at = path.resolve(file);
      for (const key of [...entries.keys()]) {
        if (key === at || key.startsWith(at + path.sep)) entries.delete(key);
      }
      for (const created of [...dirs]) {
        if (created === at || created.startsWith(at + path.sep)) dirs.delete(created);
      }
      entries.set(at, { kind: 'gone' });
    },
    existsSync: exists,
    isDirectorySync(file) {
      const at = path.resolve(file);
      if (entries.has(at)) return false;
      if (dirs.has(at)) return true;
      return exists(at) && fs.statSync(at, { throwIfNoEntry: false })?.isDirectory() === true;
    },
  };
}
