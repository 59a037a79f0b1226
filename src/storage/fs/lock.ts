/**
 * The data directory lock: one adapter, in one process, uses a directory at a time.
 *
 * The lock is `<dir>/LOCK`, holding the holder's pid. It is written complete to a file of its
 * own, fsynced, then hard-linked into place: `link()` fails if `LOCK` exists, so exactly one of
 * any number of concurrent openers wins, and a `LOCK` is never seen empty or half-written.
 *
 * A lock naming a pid that no longer runs was left by a process that died (SIGKILL, power loss)
 * and is taken over; so is one naming this process but held by no adapter of it (an adapter
 * that could not remove it). Taking over is a compare-and-swap: the takers of a lock left by pid
 * P race to link `LOCK.break-P`; the one winner checks that `LOCK` is still the same file naming
 * P, renames its own complete lock over it, and removes the break file; every other taker
 * re-reads `LOCK` and reports its holder. A taker that died holding a break file left pid Q in
 * it: the next taker breaks that one the same way, through `LOCK.break-P-Q`.
 *
 * An empty or garbled `LOCK` (this code never writes one; damage, or an older version's lock
 * written after its creation) names no process that could be checked, so it is not taken over:
 * the open fails, and the message says to remove the file once no process uses the directory.
 *
 * Why no package: `proper-lockfile` judges staleness by an mtime its holder refreshes on a
 * timer, so a holder whose event loop stalls past the limit loses its lock to a second writer;
 * an `flock()` binding (`fs-ext`, `fs-native-extensions`) is a native addon to compile or
 * download for every platform. Limits: the file system must support hard links (a `StorageError`
 * otherwise, e.g. on FAT); liveness is by pid, so a dead holder whose pid was
 * reused blocks until the file is removed by hand; worker threads of one process share a pid
 * and must not open one directory twice.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ResourceLockedError } from '../../errors.js';
import { storageError } from './io-errors.js';

export const LOCK_FILE = 'LOCK';

/** Directories (by real path) held by open adapters of this process. */
const held = new Set<string>();

/**
 * Takes the lock of `dir` (the real path of an existing directory) and returns its release.
 * Goes through `node:fs` directly rather than the adapter's `FsIo`: the lock coordinates
 * processes and must be released even when a (simulated) failing disk refuses data writes.
 *
 * @throws ResourceLockedError when another adapter of this process or a live process holds it,
 *   or when its `LOCK` names no process.
 */
export function lockDirectory(dir: string): () => void {
  if (held.has(dir)) {
    throw new ResourceLockedError(
      `data directory '${dir}' is already open in this process (pid ${process.pid})`,
    );
  }
  const file = path.join(dir, LOCK_FILE);
  try {
    const mine = writeOwnLock(dir);
    try {
      acquire(dir, file, mine);
    } finally {
      removeIfPresent(mine);
    }
  } catch (error) {
    throw storageError(error, 'locking', file);
  }
  held.add(dir);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held.delete(dir);
    removeIfPresent(file);
  };
}

/**
 * The pid of the live process holding the lock of `dir`, or undefined when none does (no
 * `LOCK`, or one left by a process that died). Reads only: for tools that must not take it.
 * An empty or garbled `LOCK` counts as held (by pid 0), as {@link lockDirectory} refuses it.
 */
export function lockHolder(dir: string): number | undefined {
  const lock = readLock(path.join(dir, LOCK_FILE));
  if (lock === undefined) return undefined;
  if (lock.pid === undefined) return 0;
  return isHeld(lock.pid) || held.has(dir) ? lock.pid : undefined;
}

function acquire(dir: string, file: string, mine: string): void {
  for (;;) {
    if (tryLink(mine, file)) return;
    const lock = readLock(file);
    if (lock === undefined) continue; // released meanwhile
    if (lock.pid === undefined) {
      throw new ResourceLockedError(
        `data directory '${dir}' is locked by a ${LOCK_FILE} that names no process (empty or garbled); remove it if no process uses the directory`,
      );
    }
    if (isHeld(lock.pid)) {
      throw new ResourceLockedError(`data directory '${dir}' is locked by process ${lock.pid}`);
    }
    if (takeOver(dir, file, mine, lock, `${file}.break-${lock.pid}`)) return;
  }
}

interface LockFile {
  readonly pid: number | undefined;
  readonly ino: number;
}

/**
 * Replaces the stale lock `lock` by `mine` under the break file `breaker`: true when done, false
 * when `LOCK` changed since it was read (try again); throws naming the process that took the
 * directory instead.
 */
function takeOver(
  dir: string,
  file: string,
  mine: string,
  lock: LockFile,
  breaker: string,
): boolean {
  const breakFile = writeOwnLock(dir);
  let won: boolean;
  try {
    won = tryLink(breakFile, breaker);
  } finally {
    removeIfPresent(breakFile);
  }
  if (!won) {
    const other = readLock(breaker);
    if (other?.pid !== undefined && !isHeld(other.pid)) {
      // The taker that holds it died: break its break file.
      return takeOver(dir, file, mine, lock, `${breaker}-${other.pid}`);
    }
    // Another taker is replacing the stale lock (or just did): the directory is theirs.
    const now = readLock(file);
    const pid = now?.pid !== undefined && now.pid !== lock.pid ? now.pid : other?.pid;
    throw new ResourceLockedError(
      `data directory '${dir}' is locked by process ${pid ?? 'unknown'} (taking over a stale lock)`,
    );
  }
  try {
    const now = readLock(file);
    // Taken over, and perhaps released, since it was read: start again.
    if (now === undefined || now.ino !== lock.ino || now.pid !== lock.pid) return false;
    fs.renameSync(mine, file);
    return true;
  } finally {
    removeBreakFiles(file, breaker);
  }
}

/** Removes `breaker` and the break files it was nested in. */
function removeBreakFiles(file: string, breaker: string): void {
  for (let name = breaker; name.length > `${file}.break`.length; ) {
    removeIfPresent(name);
    name = name.slice(0, name.lastIndexOf('-'));
  }
}

/** Writes this process's pid to a new file of its own in `dir`, durably; returns its path. */
function writeOwnLock(dir: string): string {
  const own = path.join(dir, `${LOCK_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = fs.openSync(own, 'wx');
  try {
    fs.writeSync(fd, String(process.pid));
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    removeIfPresent(own);
    throw error;
  }
  fs.closeSync(fd);
  return own;
}

/** Links `from` as `to`; false when `to` exists. */
function tryLink(from: string, to: string): boolean {
  try {
    fs.linkSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** A lock file's pid (undefined if empty or garbled) and inode, or undefined if it is gone. */
function readLock(file: string): LockFile | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const text = fs.readFileSync(fd, 'latin1');
    const pid = Number(text);
    const valid = /^\d{1,10}$/.test(text) && Number.isSafeInteger(pid) && pid > 0;
    return { pid: valid ? pid : undefined, ino: fs.fstatSync(fd).ino };
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether `pid` may be holding a lock: another live process (this one holds by `held`). */
function isHeld(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, under another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function removeIfPresent(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}
