/**
 * A log's options (`~options`, FORMAT.md): the segment size it was created with, which it keeps
 * whatever size a later open asks for.
 */
import path from 'node:path';
import { CorruptionError } from '../../errors.js';
import { type FsIo, readFile, replaceFile } from './io.js';

export const OPTIONS_FILE = '~options';

/**
 * The segment size a log's `~options` file (`stored`, read from `file`) holds.
 *
 * @throws CorruptionError when it is not such JSON.
 */
export function parseLogOptions(stored: Buffer, file: string): number {
  let options: { segmentBytes?: unknown } | null;
  try {
    options = JSON.parse(stored.toString('utf8')) as typeof options;
  } catch (cause) {
    throw new CorruptionError(`${file} is not JSON`, { cause, file });
  }
  const size = options?.segmentBytes;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1) {
    throw new CorruptionError(`${file} holds no valid segmentBytes`, { file });
  }
  return size;
}

/**
 * The segment size of the log in `dir`: the one it holds, or `segmentBytes`, written then (a new
 * log, or one that lost the file) and, with `fsync`, made durable before a list names the log.
 */
export function loadLogOptions(
  io: FsIo,
  dir: string,
  segmentBytes: number,
  fsync: boolean,
): number {
  const file = path.join(dir, OPTIONS_FILE);
  const stored = readFile(io, file);
  if (stored) return parseLogOptions(stored, file);
  replaceFile(io, file, Buffer.from(JSON.stringify({ segmentBytes })), fsync);
  return segmentBytes;
}
