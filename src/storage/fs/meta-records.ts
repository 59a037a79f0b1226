/**
 * The records of a `~meta` file (layout in FORMAT.md) and reading them back from damaged bytes.
 * A record is valid only if its length fits, its crc matches and its JSON is `[key]` or
 * `[key, value]`; a crc over zero bytes is 0, so a zero-filled stretch never passes for records.
 *
 * A bad record with nothing valid after it is a torn last write when it is cut short by the end
 * of the file or the rest of the file is zeros (what a crash mid-append leaves). Anything else is
 * damage: the reader searches for the next valid record and carries on from there, so one bad
 * record costs only itself.
 */
import type { JsonValue } from '../types.js';
import { crc32 } from './checksum.js';

const HEAD = 8;

/** Bytes of a stretch the reader could not use. */
export interface BadStretch {
  readonly position: number;
  readonly end: number;
}

/** What {@link readMetaRecords} found. */
export interface MetaRead {
  /** Valid records read. */
  readonly records: number;
  /** Where a torn last write starts, or -1. */
  readonly tornAt: number;
  /** Damaged stretches skipped. */
  readonly damaged: readonly BadStretch[];
}

/** Encodes one record: a deletion when `value` is undefined. */
export function metaRecord(key: string, value: JsonValue | undefined): Buffer {
  const json = Buffer.from(JSON.stringify(value === undefined ? [key] : [key, value]), 'utf8');
  const out = Buffer.allocUnsafe(HEAD + json.length);
  out.writeUInt32LE(json.length, 0);
  out.writeUInt32LE(crc32(json), 4);
  json.copy(out, HEAD);
  return out;
}

/** Reads every valid record of `buf` in order into `apply`, skipping damage (see above). */
export function readMetaRecords(
  buf: Buffer,
  apply: (key: string, value: JsonValue | undefined) => void,
): MetaRead {
  const damaged: BadStretch[] = [];
  let records = 0;
  let tornAt = -1;
  let at = 0;
  while (at < buf.length) {
    const parsed = parseRecord(buf, at);
    if (parsed) {
      apply(parsed.key, parsed.value);
      records++;
      at = parsed.end;
      continue;
    }
    const next = nextRecord(buf, at + 1);
    if (next < 0) {
      if (isTorn(buf, at)) tornAt = at;
      else damaged.push({ position: at, end: buf.length });
      break;
    }
    damaged.push({ position: at, end: next });
    at = next;
  }
  return { records, tornAt, damaged };
}

interface Parsed {
  readonly key: string;
  readonly value: JsonValue | undefined;
  readonly end: number;
}

function parseRecord(buf: Buffer, at: number): Parsed | undefined {
  if (at + HEAD > buf.length) return undefined;
  const end = at + HEAD + buf.readUInt32LE(at);
  if (end > buf.length) return undefined;
  const body = buf.subarray(at + HEAD, end);
  if (body.length === 0 || crc32(body) !== buf.readUInt32LE(at + 4)) return undefined;
  let entry: unknown;
  try {
    entry = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(entry) || typeof entry[0] !== 'string') return undefined;
  if (entry.length === 1) return { key: entry[0], value: undefined, end };
  if (entry.length === 2) return { key: entry[0], value: entry[1] as JsonValue, end };
  return undefined;
}

function nextRecord(buf: Buffer, from: number): number {
  for (let at = from; at + HEAD < buf.length; at++) {
    if (parseRecord(buf, at)) return at;
  }
  return -1;
}

/** A record cut short by the end of the file, or a zero-filled rest. */
function isTorn(buf: Buffer, at: number): boolean {
  if (at + HEAD > buf.length || at + HEAD + buf.readUInt32LE(at) > buf.length) return true;
  for (let i = at; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}
