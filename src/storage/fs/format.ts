/**
 * The format marker of a data directory (`<dir>/FORMAT`, see FORMAT.md): one version number for
 * the layout and every file in it, checked before anything is read so that data written by
 * another version of the format is refused instead of misread.
 *
 * An empty directory (or one holding only unrelated files) is new: the marker is written, and
 * made durable, before any namespace is created. A directory that holds namespaces but no marker
 * is refused, since the format of its files is unknown.
 */
import path from 'node:path';
import { CorruptionError } from '../../errors.js';
import { type FsIo, readFile, replaceFile } from './io.js';

/** The version of the on-disk format this code reads and writes. */
export const FORMAT_VERSION = 1;
export const FORMAT_FILE = 'FORMAT';
const MARKER = /^mqlite-fs (\d{1,9})\n$/;
/** The file of a namespace directory, by which an unmarked directory is recognised as data. */
const NAMESPACE_FILE = '~meta';

/**
 * Checks the format marker of `dir`, writing it if the directory is new.
 *
 * @throws CorruptionError when the directory is of another format version, its marker is
 *   garbled, or it holds namespaces without a marker.
 */
export function checkFormat(io: FsIo, dir: string, fsync: boolean): void {
  const file = path.join(dir, FORMAT_FILE);
  const stored = readFile(io, file);
  if (stored) {
    const match = MARKER.exec(stored.toString('latin1'));
    if (!match) throw new CorruptionError(`data directory '${dir}' has a garbled ${FORMAT_FILE}`);
    const version = Number(match[1]);
    if (version !== FORMAT_VERSION) {
      throw new CorruptionError(
        `data directory '${dir}' is in format version ${version}; this version of mqlite reads format version ${FORMAT_VERSION} only`,
      );
    }
    return;
  }
  const data = io
    .readdirSync(dir)
    .find(
      (entry) => !entry.startsWith('.') && io.existsSync(path.join(dir, entry, NAMESPACE_FILE)),
    );
  if (data !== undefined) {
    throw new CorruptionError(
      `data directory '${dir}' holds namespace '${data}' but no ${FORMAT_FILE} file, so its format version is unknown`,
    );
  }
  replaceFile(io, file, Buffer.from(`mqlite-fs ${FORMAT_VERSION}\n`, 'latin1'), fsync);
  if (fsync) {
    // The marker must be durable before any namespace is: else a crash could leave data
    // without it, which the next open refuses.
    const fd = io.openSync(dir, 'r');
    try {
      io.fsyncSync(fd);
    } finally {
      io.closeSync(fd);
    }
  }
}
