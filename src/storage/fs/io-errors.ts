/**
 * System errors of file operations as `StorageError`s naming the operation and the file: a full
 * disk or a failing device reaches the caller as an `MqliteError` with the system's error as its
 * `cause`. ENOENT and EEXIST pass unchanged: the adapter branches on them (a file not there yet,
 * one already there).
 */
import { MqliteError, StorageError } from '../../errors.js';
import type { FsIo } from './io.js';

/** Errors the adapter handles itself, left as they are. */
const EXPECTED = new Set(['ENOENT', 'EEXIST']);

/** `error` as a StorageError of `operation` on `file`, unless it is one the adapter expects. */
export function storageError(error: unknown, operation: string, file: string | undefined): unknown {
  if (error instanceof MqliteError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string' || EXPECTED.has(code)) return error;
  const on = file === undefined ? '' : ` '${file}'`;
  return new StorageError(`${operation}${on} failed: ${code}`, {
    file,
    ioCode: code,
    cause: error,
  });
}

/** Wraps `io` so that its system errors are {@link storageError}s naming the file. */
export function withStorageErrors(io: FsIo): FsIo {
  const files = new Map<number, string>();
  /** The descriptors open on each path, so a rename moves their name with the file. */
  const byPath = new Map<string, Set<number>>();
  const forget = (fd: number) => {
    const file = files.get(fd);
    if (file === undefined) return;
    files.delete(fd);
    const fds = byPath.get(file);
    fds?.delete(fd);
    if (fds?.size === 0) byPath.delete(file);
  };
  const remember = (fd: number, file: string) => {
    forget(fd);
    files.set(fd, file);
    const fds = byPath.get(file);
    if (fds) fds.add(fd);
    else byPath.set(file, new Set([fd]));
  };
  const run = <R>(operation: string, file: string | undefined, call: () => R): R => {
    try {
      return call();
    } catch (error) {
      throw storageError(error, operation, file);
    }
  };
  return {
    openSync(path, flags) {
      const fd = run('open', path, () => io.openSync(path, flags));
      remember(fd, path);
      return fd;
    },
    closeSync(fd) {
      const file = files.get(fd);
      forget(fd);
      run('close', file, () => io.closeSync(fd));
    },
    writeSync: (fd, buffer, offset, length, position) =>
      run('write', files.get(fd), () => io.writeSync(fd, buffer, offset, length, position)),
    readSync: (fd, buffer, offset, length, position) =>
      run('read', files.get(fd), () => io.readSync(fd, buffer, offset, length, position)),
    fsync(fd, callback) {
      const file = files.get(fd);
      io.fsync(fd, (error) =>
        callback(error ? (storageError(error, 'fsync', file) as Error) : null),
      );
    },
    fsyncSync: (fd) => run('fsync', files.get(fd), () => io.fsyncSync(fd)),
    ftruncateSync: (fd, length) =>
      run('truncate', files.get(fd), () => io.ftruncateSync(fd, length)),
    sizeSync: (fd) => run('stat', files.get(fd), () => io.sizeSync(fd)),
    renameSync(from, to) {
      run(`rename to '${to}' of`, from, () => io.renameSync(from, to));
      for (const fd of byPath.get(from) ?? []) remember(fd, to);
    },
    unlinkSync: (path) => run('unlink', path, () => io.unlinkSync(path)),
    mkdirSync: (path) => run('mkdir', path, () => io.mkdirSync(path)),
    readdirSync: (path) => run('readdir', path, () => io.readdirSync(path)),
    rmSync: (path) => run('remove', path, () => io.rmSync(path)),
    existsSync: (path) => io.existsSync(path),
    isDirectorySync: (path) => run('stat', path, () => io.isDirectorySync(path)),
  };
}
