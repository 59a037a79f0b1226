/**
 * Creates a data directory and finds its real path. `fs.mkdirSync(dir, { recursive: true })` is
 * not used for it: where the OS refuses a new entry with ENOENT although the parent exists
 * (`/proc`), Node's recursive mkdir retries forever.
 */
import fs from 'node:fs';
import path from 'node:path';
import { StorageError } from '../../errors.js';

/**
 * Creates `dir` (absolute) and any missing parents, one level at a time, and returns its real
 * path (symlinks resolved), by which the directory is locked.
 *
 * @throws StorageError when a parent is not a directory or a level cannot be created.
 */
export function makeDataDirectory(dir: string): string {
  const missing: string[] = [];
  let at = dir;
  for (;;) {
    const stat = statOrUndefined(at);
    if (stat?.isDirectory()) break;
    if (stat) {
      throw new StorageError(`cannot create data directory '${dir}': '${at}' is not a directory`, {
        file: at,
        ioCode: 'ENOTDIR',
      });
    }
    missing.push(at);
    const parent = path.dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const level of missing.reverse()) {
    try {
      fs.mkdirSync(level);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && statOrUndefined(level)?.isDirectory()) continue;
      throw new StorageError(
        `cannot create data directory '${dir}': mkdir '${level}' failed (${code ?? String(error)})`,
        { file: level, ioCode: code, cause: error },
      );
    }
  }
  return fs.realpathSync(dir);
}

function statOrUndefined(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new StorageError(`cannot use data directory '${file}': ${code ?? String(error)}`, {
      file,
      ioCode: code,
      cause: error,
    });
  }
}
