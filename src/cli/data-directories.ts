/**
 * The data directories a reading command (`inspect`, `verify`) covers: the directory it was given,
 * which is the vhost `/`, and the directory of every other vhost `mqlite serve` keeps inside it
 * (`~vhosts/<name>`), or the one vhost `--vhost` names. A directory that is not an mqlite data
 * directory is refused before anything reads it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { StorageError } from '../errors.js';
import { makeDataDirectory } from '../storage/fs/data-dir.js';
import { isDataDirectory, nodeIo } from '../storage/fs/index.js';
import { decodeName } from '../storage/fs/names.js';
import { DirectoryError } from './command.js';
import { VHOSTS_DIR, vhostDirectory } from './serve/vhost-brokers.js';

/** One vhost's data directory. */
export interface VhostDirectory {
  readonly vhost: string;
  readonly dir: string;
}

/**
 * The vhosts of the data directory `given` (`/` first, then the others by name), or only `only`.
 * @throws DirectoryError when `given` is missing or not a data directory, or holds no vhost `only`.
 */
export function vhostDirectories(given: string, only?: string): VhostDirectory[] {
  const dir = path.resolve(given);
  const stat = fs.statSync(dir, { throwIfNoEntry: false });
  if (!stat?.isDirectory()) {
    throw new DirectoryError(`'${given}': ${stat ? 'not a directory' : 'no such directory'}`);
  }
  if (!isDataDirectory(nodeIo, dir)) {
    throw new DirectoryError(
      `'${given}' is not an mqlite data directory (it has no FORMAT file and no queue in it)`,
    );
  }
  const vhostsDir = path.join(dir, VHOSTS_DIR);
  const others = (fs.existsSync(vhostsDir) ? fs.readdirSync(vhostsDir) : [])
    .filter((entry) => isDataDirectory(nodeIo, path.join(dir, VHOSTS_DIR, entry)))
    .map((entry) => ({ vhost: decodeName(entry) ?? entry, dir: path.join(dir, VHOSTS_DIR, entry) }))
    .sort((a, b) => (a.vhost < b.vhost ? -1 : a.vhost > b.vhost ? 1 : 0));
  const all = [{ vhost: '/', dir }, ...others];
  if (only === undefined) return all;
  const chosen = all.find((v) => v.vhost === only);
  if (chosen) return [chosen];
  const target = vhostDirectory(dir, only);
  throw new DirectoryError(
    `'${given}' holds no data of vhost '${only}' (no data directory ${path.relative(dir, target)}); its vhosts: ${all.map((v) => `'${v.vhost}'`).join(', ')}`,
  );
}

/**
 * Creates the data directory `serve --data` was given when it is missing, so that a path that
 * cannot be one is refused as the operator's mistake it is, before anything listens.
 * @throws DirectoryError when it cannot be made (a parent is a file, no permission, ...).
 */
export function createDataDirectory(given: string): void {
  try {
    makeDataDirectory(path.resolve(given));
  } catch (error) {
    if (!(error instanceof StorageError)) throw error;
    const why = error.ioCode === 'ENOTDIR' ? 'not a directory' : (error.ioCode ?? 'failed');
    const where = error.file === undefined ? why : `'${error.file}': ${why}`;
    throw new DirectoryError(`'${given}': cannot create the data directory (${where})`);
  }
}
