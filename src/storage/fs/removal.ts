/**
 * Removing a directory tree so that a crash leaves it whole or going, never half there: it is
 * renamed aside first (`~removing.<name>`, the rename made durable), then removed. A directory
 * found aside on open is one whose removal a crash cut short: its removal is finished then.
 */
import path from 'node:path';
import { type FsIo, fsyncDirSync } from './io.js';

/** Prefix of a directory being removed. */
const REMOVING = '~removing.';

/**
 * Renames `dir` aside and, when `fsync`, makes the rename durable; returns where it now is, for
 * the caller to remove once whatever must come first is done.
 */
export function setAside(io: FsIo, dir: string, fsync: boolean): string {
  const aside = asidePath(dir);
  io.rmSync(aside);
  io.renameSync(dir, aside);
  if (fsync) fsyncDirSync(io, path.dirname(dir));
  return aside;
}

/** The path `dir` has while it is being removed. */
export function asidePath(dir: string): string {
  return path.join(path.dirname(dir), REMOVING + path.basename(dir));
}

/**
 * Finishes the removals a crash cut short in `parent`; returns the names (of directories) they
 * had.
 */
export function finishRemovals(io: FsIo, parent: string): Set<string> {
  const removed = new Set<string>();
  for (const entry of io.readdirSync(parent)) {
    if (!entry.startsWith(REMOVING)) continue;
    io.rmSync(path.join(parent, entry));
    removed.add(entry.slice(REMOVING.length));
  }
  return removed;
}
