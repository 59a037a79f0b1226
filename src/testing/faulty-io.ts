/**
 * A fault-injecting wrapper around the fs adapter's file operations, for tests that prove what
 * survives a failed write or a crash:
 *
 * ```ts
 * const faults = faultyIo();
 * const storage = fsStorage({ dir, io: faults.io });
 * faults.failWritesAfter(10); // the write crossing 10 more bytes stops half-way and throws EIO
 * ```
 */
import { type FsIo, nodeIo } from '../storage/fs/io.js';

/** Controls and counters of a {@link faultyIo}. */
export interface FaultyIo {
  /** The file operations to pass to `fsStorage({ io })`. */
  readonly io: FsIo;
  /**
   * After `bytes` more bytes are written, the write in progress stops there (a torn write) and
   * throws `code` (EIO, or ENOSPC for a full disk), and so does every later write until `heal()`.
   * With `file`, only writes to files whose path it matches count and fail (the write a full
   * disk refuses first, such as a new queue's files rather than the broker's metadata).
   */
  failWritesAfter(bytes: number, code?: 'EIO' | 'ENOSPC', file?: RegExp): void;
  /**
   * Every later open of a file whose path `file` matches (every file without it) throws EMFILE
   * (too many open files) until `heal()`.
   */
  failOpens(file?: RegExp): void;
  /** Every later fsync reports EIO until `heal()`. */
  failFsyncs(): void;
  /**
   * Simulates the process dying: from now on nothing more reaches the disk (writes, fsyncs,
   * renames, unlinks and truncations throw), while reads and closing descriptors still work so
   * the test can release the adapter.
   */
  crash(): void;
  /** Stops injecting faults. */
  heal(): void;
  /** Bytes read, write calls, bytes written and fsyncs done so far. */
  readonly stats: { bytesRead: number; writes: number; bytesWritten: number; fsyncs: number };
}

const ERROR_TEXT = {
  EIO: 'i/o error',
  ENOSPC: 'no space left on device',
  EMFILE: 'too many open files',
};

function eio(what: string, code: keyof typeof ERROR_TEXT = 'EIO'): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `${code}: ${ERROR_TEXT[code]}, ${what} (injected)`,
  );
  error.code = code;
  return error;
}

/** Wraps `base` (the real file system by default) with fault injection. */
export function faultyIo(base: FsIo = nodeIo): FaultyIo {
  let writeBudget = Number.POSITIVE_INFINITY;
  let writeError: 'EIO' | 'ENOSPC' = 'EIO';
  let writesTo: RegExp | undefined;
  let opensFail: RegExp | undefined;
  /** Paths of open descriptors, for writes aimed at some files. */
  const paths = new Map<number, string>();
  let fsyncFails = false;
  let crashed = false;
  const stats = { bytesRead: 0, writes: 0, bytesWritten: 0, fsyncs: 0 };
  const mutation = (what: string) => {
    if (crashed) throw eio(what);
  };

  const io: FsIo = {
    ...base,
    openSync(path, flags) {
      // Only flags that create or truncate change the disk ('r+' reopens a file to read it too).
      if (/[wax]/.test(flags)) mutation(`open '${path}'`);
      if (opensFail?.test(path)) throw eio(`open '${path}'`, 'EMFILE');
      const fd = base.openSync(path, flags);
      paths.set(fd, path);
      return fd;
    },
    closeSync(fd) {
      paths.delete(fd);
      base.closeSync(fd);
    },
    writeSync(fd, buffer, offset, length, position) {
      mutation('write');
      stats.writes++;
      if (length > writeBudget && (!writesTo || writesTo.test(paths.get(fd) ?? ''))) {
        const partial = Math.max(0, Math.floor(writeBudget));
        if (partial > 0) base.writeSync(fd, buffer, offset, partial, position);
        stats.bytesWritten += partial;
        writeBudget = 0;
        throw eio('write', writeError);
      }
      if (!writesTo || writesTo.test(paths.get(fd) ?? '')) writeBudget -= length;
      const n = base.writeSync(fd, buffer, offset, length, position);
      stats.bytesWritten += n;
      return n;
    },
    readSync(fd, buffer, offset, length, position) {
      const n = base.readSync(fd, buffer, offset, length, position);
      stats.bytesRead += n;
      return n;
    },
    fsync(fd, callback) {
      if (crashed || fsyncFails) {
        setImmediate(() => callback(eio('fsync')));
        return;
      }
      stats.fsyncs++;
      base.fsync(fd, callback);
    },
    fsyncSync(fd) {
      if (crashed || fsyncFails) throw eio('fsync');
      stats.fsyncs++;
      base.fsyncSync(fd);
    },
    ftruncateSync(fd, length) {
      mutation('ftruncate');
      base.ftruncateSync(fd, length);
    },
    renameSync(from, to) {
      mutation(`rename '${from}'`);
      base.renameSync(from, to);
    },
    unlinkSync(path) {
      mutation(`unlink '${path}'`);
      base.unlinkSync(path);
    },
    mkdirSync(path) {
      mutation(`mkdir '${path}'`);
      base.mkdirSync(path);
    },
    rmSync(path) {
      mutation(`rm '${path}'`);
      base.rmSync(path);
    },
  };

  return {
    io,
    stats,
    failWritesAfter(bytes, code = 'EIO', file) {
      writeBudget = bytes;
      writeError = code;
      writesTo = file;
    },
    failOpens(file = /(?:)/) {
      opensFail = file;
    },
    failFsyncs() {
      fsyncFails = true;
    },
    crash() {
      crashed = true;
    },
    heal() {
      writeBudget = Number.POSITIVE_INFINITY;
      writesTo = opensFail = undefined;
      fsyncFails = false;
      crashed = false;
    },
  };
}
