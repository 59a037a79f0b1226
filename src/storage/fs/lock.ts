/**
 * The data directory lock: one adapter, in one process, uses a directory at a time. Opening
 * creates `<dir>/LOCK` exclusively and writes the process id into it; closing removes it.
 *
 * A lock left behind by a process that died (SIGKILL, power loss) names a pid that no longer
 * runs: it is stale and taken over. A lock naming this process but held by no open adapter was
 * left by an adapter that could not remove it (its disk failed, or a test abandoned it) and is
 * taken over too. Limits: the check is by pid, so a dead holder whose pid was reused by an
 * unrelated process still blocks (remove the file by hand), and two processes taking over the
 * same stale lock in the same instant can both succeed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ResourceLockedError } from '../../errors.js';

export const LOCK_FILE = 'LOCK';

/** Directories held by open adapters of this process. */
const held = new Set<string>();

/**
 * Takes the lock of `dir` (an absolute path; the directory exists) and returns its release.
 * Goes through `node:fs` directly rather than the adapter's `FsIo`: the lock coordinates
 * processes and must be released even when a (simulated) failing disk refuses data writes.
 *
 * @throws ResourceLockedError when another adapter of this process or a live process holds it.
 */
export function lockDirectory(dir: string): () => void {
  if (held.has(dir)) {
    throw new ResourceLockedError(
      `data directory '${dir}' is already open in this process (pid ${process.pid})`,
    );
  }
  const file = path.join(dir, LOCK_FILE);
  for (;;) {
    let fd: number;
    try {
      fd = fs.openSync(file, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = holder(file);
      if (pid !== undefined && pid !== process.pid && isAlive(pid)) {
        throw new ResourceLockedError(`data directory '${dir}' is locked by process ${pid}`);
      }
      removeIfPresent(file); // stale: its holder is gone
      continue;
    }
    try {
      fs.writeSync(fd, String(process.pid));
    } finally {
      fs.closeSync(fd);
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
}

/** The pid a lock file names, or undefined if it is gone, empty or garbled. */
function holder(file: string): number | undefined {
  try {
    const text = fs.readFileSync(file, 'utf8').trim();
    const pid = Number(text);
    return /^\d+$/.test(text) && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function isAlive(pid: number): boolean {
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
