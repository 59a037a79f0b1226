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
import { CorruptionError, FormatVersionError } from '../../errors.js';
import { type FsIo, fsyncDirSync, readFile, replaceFile } from './io.js';

/** The version of the on-disk format this code writes. */
export const FORMAT_VERSION = 5;
/**
 * The oldest version it reads. Version 2 added span checksums to index files; version 3 a segment
 * layout checksummed per chunk of frames, beside which the older layout is still read; version 4
 * a list of its segments in each log (`~segments`), written on open where it is missing; version
 * 5 a list of its logs in each namespace (`~logs`), written for every namespace by the upgrade.
 * An older directory is marked 5 on open.
 */
const OLDEST_READ = 1;
export const FORMAT_FILE = 'FORMAT';
const MARKER = /^mqlite-fs (\d{1,9})\n$/;
/** The file of a namespace directory, by which an unmarked directory is recognised as data. */
const NAMESPACE_FILE = '~meta';

/**
 * Checks the format marker of `dir`, writing it if the directory is new and raising it to
 * {@link FORMAT_VERSION} if it is older.
 *
 * Returns the version the directory was in (that of a new one for a new directory).
 * `upgrade` runs before an older directory is marked current, with the version it was in.
 *
 * @throws FormatVersionError when the directory is of a format version this code does not read.
 * @throws CorruptionError when its marker is garbled, or it holds namespaces without a marker.
 */
export function checkFormat(
  io: FsIo,
  dir: string,
  fsync: boolean,
  upgrade: (from: number) => void = () => {},
): number {
  const file = path.join(dir, FORMAT_FILE);
  const stored = readFile(io, file);
  if (stored) {
    const match = MARKER.exec(stored.toString('latin1'));
    if (!match) throw new CorruptionError(`data directory '${dir}' has a garbled ${FORMAT_FILE}`);
    const version = Number(match[1]);
    if (version < OLDEST_READ || version > FORMAT_VERSION) {
      throw new FormatVersionError(
        `data directory '${dir}' is in format version ${version}${version > FORMAT_VERSION ? ', written by a newer mqlite' : ''}; this version of mqlite reads format versions ${OLDEST_READ} to ${FORMAT_VERSION}`,
        version,
        { oldest: OLDEST_READ, newest: FORMAT_VERSION },
      );
    }
    // Marked before anything of the new version is written, so older code refuses it from then.
    if (version < FORMAT_VERSION) {
      upgrade(version);
      writeMarker(io, dir, file, fsync);
    }
    return version;
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
  writeMarker(io, dir, file, fsync);
  return FORMAT_VERSION;
}

/**
 * Whether `dir` is a data directory: it holds the format marker, or namespaces of a directory
 * older than the marker. An empty or missing directory is not one (yet).
 */
export function isDataDirectory(io: FsIo, dir: string): boolean {
  if (io.existsSync(path.join(dir, FORMAT_FILE))) return true;
  let entries: string[];
  try {
    entries = io.readdirSync(dir);
  } catch {
    return false;
  }
  return entries.some(
    (entry) => !entry.startsWith('.') && io.existsSync(path.join(dir, entry, NAMESPACE_FILE)),
  );
}

function writeMarker(io: FsIo, dir: string, file: string, fsync: boolean): void {
  replaceFile(io, file, Buffer.from(`mqlite-fs ${FORMAT_VERSION}\n`, 'latin1'), fsync);
  if (fsync) {
    // The marker must be durable before any data of its version is: else a crash could leave
    // data under a marker that does not describe it.
    fsyncDirSync(io, dir);
  }
}
