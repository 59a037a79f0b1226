/**
 * The file operations the fs adapter performs, gathered in one object so tests can swap in a
 * faulty implementation (a write that fails half-way, an fsync that errors) and prove that what
 * was acknowledged survives. Everything but `fsync` is synchronous: writes go to the OS page
 * cache and return quickly; only the fsync runs on libuv's thread pool.
 */
import fs from 'node:fs';

/** The low-level file operations of the fs adapter. */
export interface FsIo {
  openSync(path: string, flags: string): number;
  closeSync(fd: number): void;
  /** Writes `length` bytes of `buffer` from `offset` at file `position`; returns bytes written. */
  writeSync(
    fd: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): number;
  /** Reads up to `length` bytes at file `position` into `buffer` at `offset`; returns bytes read. */
  readSync(
    fd: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): number;
  /** Flushes the file to stable storage on the thread pool. */
  fsync(fd: number, callback: (error: Error | null) => void): void;
  fsyncSync(fd: number): void;
  ftruncateSync(fd: number, length: number): void;
  /** Size of an open file in bytes. */
  sizeSync(fd: number): number;
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  mkdirSync(path: string): void;
  /** Names in a directory; empty when it does not exist. */
  readdirSync(path: string): string[];
  /** Removes a file or a directory tree; a missing path is not an error. */
  rmSync(path: string): void;
  existsSync(path: string): boolean;
  /** Whether `path` is a directory (false when it is missing or anything else). */
  isDirectorySync(path: string): boolean;
}

/** The real file system. */
export const nodeIo: FsIo = {
  openSync: (path, flags) => fs.openSync(path, flags),
  closeSync: (fd) => fs.closeSync(fd),
  writeSync: (fd, buffer, offset, length, position) =>
    fs.writeSync(fd, buffer, offset, length, position),
  readSync: (fd, buffer, offset, length, position) =>
    fs.readSync(fd, buffer, offset, length, position),
  fsync: (fd, callback) => fs.fsync(fd, callback),
  fsyncSync: (fd) => fs.fsyncSync(fd),
  ftruncateSync: (fd, length) => fs.ftruncateSync(fd, length),
  sizeSync: (fd) => fs.fstatSync(fd).size,
  renameSync: (from, to) => fs.renameSync(from, to),
  unlinkSync: (path) => fs.unlinkSync(path),
  mkdirSync: (path) => {
    fs.mkdirSync(path, { recursive: true });
  },
  readdirSync: (path) => {
    try {
      return fs.readdirSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  },
  rmSync: (path) => fs.rmSync(path, { recursive: true, force: true }),
  existsSync: (path) => fs.existsSync(path),
  isDirectorySync: (path) => fs.statSync(path, { throwIfNoEntry: false })?.isDirectory() === true,
};

/** Writes all of `length` bytes, looping over short writes. */
export function writeFully(
  io: FsIo,
  fd: number,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
): void {
  let done = 0;
  while (done < length) {
    done += io.writeSync(fd, buffer, offset + done, length - done, position + done);
  }
}

/** Reads up to `length` bytes, looping over short reads; returns bytes read (less at EOF). */
export function readFully(
  io: FsIo,
  fd: number,
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
): number {
  let done = 0;
  while (done < length) {
    const n = io.readSync(fd, buffer, offset + done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** Reads a whole small file, or returns undefined when it does not exist. */
export function readFile(io: FsIo, path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = io.openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const size = io.sizeSync(fd);
    const buf = Buffer.allocUnsafe(size);
    return buf.subarray(0, readFully(io, fd, buf, 0, size, 0));
  } finally {
    io.closeSync(fd);
  }
}

/** Unlinks a file; one already gone is not an error. */
export function unlinkIfPresent(io: FsIo, file: string): void {
  try {
    io.unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * Replaces a small file atomically: writes `path.tmp`, optionally fsyncs it, renames it over
 * `path`. A crash leaves either the old or the new content, never a mix.
 */
export function replaceFile(io: FsIo, path: string, data: Uint8Array, fsyncFirst: boolean): void {
  io.closeSync(replaceFileOpen(io, path, data, fsyncFirst));
}

/**
 * {@link replaceFile}, returning a descriptor of the new file open for reading and writing
 * (opening it again would cost another system call).
 */
export function replaceFileOpen(
  io: FsIo,
  path: string,
  data: Uint8Array,
  fsyncFirst: boolean,
): number {
  const tmp = `${path}.tmp`;
  const fd = io.openSync(tmp, 'w+');
  try {
    writeFully(io, fd, data, 0, data.byteLength, 0);
    if (fsyncFirst) io.fsyncSync(fd);
    io.renameSync(tmp, path);
  } catch (error) {
    io.closeSync(fd);
    try {
      // A partial copy would hold space a full disk needs back.
      unlinkIfPresent(io, tmp);
    } catch {
      // The error that stopped the write is the one to report.
    }
    throw error;
  }
  return fd;
}

/** Fsyncs a directory, so that files created, renamed or removed in it stay so after a crash. */
export function fsyncDir(io: FsIo, dir: string, done: (error: Error | null) => void): void {
  let fd: number;
  try {
    fd = io.openSync(dir, 'r');
  } catch (error) {
    done(error as Error);
    return;
  }
  io.fsync(fd, (error) => {
    io.closeSync(fd);
    done(error);
  });
}

/** Fsyncs a directory on the calling thread (for rare changes that must be durable at once). */
export function fsyncDirSync(io: FsIo, dir: string): void {
  const fd = io.openSync(dir, 'r');
  try {
    io.fsyncSync(fd);
  } finally {
    io.closeSync(fd);
  }
}

/** An fsync to start, told where to report its end. */
export type FsyncJob = (done: (error: Error | null) => void) => void;

/**
 * Runs several fsyncs at once and calls `done` when all ended, with the first error.
 * Each job receives its own completion callback.
 */
export function allDone(jobs: readonly FsyncJob[], done: (error: Error | null) => void): void {
  let pending = jobs.length;
  let first: Error | null = null;
  if (pending === 0) {
    done(null);
    return;
  }
  for (const job of jobs) {
    job((error) => {
      first ??= error;
      if (--pending === 0) done(first);
    });
  }
}
