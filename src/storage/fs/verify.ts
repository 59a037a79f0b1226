/**
 * Checking a whole data directory: every checksum of every segment, index, marks file and
 * metadata record, read only (nothing is written, the lock is not taken). Each damaged region
 * is reported with its file and byte range and what a reopen does about it, by the same rules
 * as recovery (FORMAT.md, "Recovery on open"): a torn tail is cut, damage elsewhere is refused.
 * Unlike a reopen, which trusts a segment's index for the bytes it covers, every frame is
 * checked, and checking goes on past damage to find every damaged region.
 */
import path from 'node:path';
import { CorruptionError } from '../../errors.js';
import { checkFormat } from './format.js';
import {
  checkRun,
  FILE_HEADER,
  FRAME_CHECKSUM_LAYOUT,
  FRAME_HEADER,
  frameDelta,
  INCOMPLETE,
  parseFileHeader,
  SEGMENT_LAYOUT,
  u32,
} from './frame.js';
import { intactRunAfter, NONE_INTACT, SEARCH_GAVE_UP } from './intact-run.js';
import { nodeIo, readFile, readFully } from './io.js';
import { LOG_LIST_FILE, readLogList } from './log-list.js';
import { OPTIONS_FILE, parseLogOptions } from './log-options.js';
import { MARKS_FILE, readMarks } from './marks.js';
import { PREVIOUS_SUFFIX } from './meta.js';
import { readMetaRecords } from './meta-records.js';
import { encodeName } from './names.js';
import { listNamedDirs } from './namespace.js';
import { overlayIo } from './overlay-io.js';
import { segmentFileName } from './segment.js';
import { indexState } from './segment-index.js';
import { LIST_FILE, readSegmentList } from './segment-list.js';

/**
 * What a reopen does about a damaged region: `cut` it off (a torn last write, never confirmed),
 * `refuse` the log (a `CorruptionError`: the broker keeps the queue apart, see
 * `broker.damaged()`; in bytes an index covers, the read of a record there fails instead),
 * `skip` it (damaged `~meta` records: the others are read), `restore` the file from its previous
 * version (a missing `~meta`), `rebuild` it from the segment (a damaged index: nothing lost),
 * `drop` it (a listed segment or log that is missing: reported lost, the rest opens), or
 * `relist` (a missing or damaged `~segments` or `~logs`: reported, and made again of the files
 * present, so a file lost with it is not found).
 */
export type DamageAction = 'cut' | 'refuse' | 'skip' | 'restore' | 'rebuild' | 'drop' | 'relist';

/** One damaged region of a data directory. */
export interface Damage {
  readonly file: string;
  /** Byte range `[position, end)` of the file. */
  readonly position: number;
  readonly end: number;
  readonly action: DamageAction;
  /** What is wrong, in words. */
  readonly reason: string;
  /** The namespace (a queue's name) and log the file belongs to, when it does. */
  readonly namespace?: string | undefined;
  readonly log?: string | undefined;
}

/** What {@link verifyDataDirectory} found. */
export interface VerifyReport {
  readonly formatVersion: number;
  /** Files and bytes checked. */
  readonly files: number;
  readonly bytes: number;
  readonly damage: readonly Damage[];
}

export interface VerifyOptions {
  /** Called as bytes are checked, with the total to check. */
  readonly onProgress?: (checked: number, total: number) => void;
  /** Stops the check (the promise rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

/** A file to check and who it belongs to. */
interface Job {
  readonly file: string;
  readonly size: number;
  readonly check: (buf: Buffer) => Omit<Damage, 'file' | 'namespace' | 'log'>[];
  readonly namespace?: string;
  readonly log?: string;
}

/**
 * Checks every file of the data directory `dir` (see the header).
 *
 * @throws FormatVersionError when the directory is in a format version this code does not read.
 */
export async function verifyDataDirectory(
  dir: string,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const damage: Damage[] = [];
  let formatVersion = 0;
  try {
    formatVersion = checkFormat(overlayIo(), dir, false);
  } catch (error) {
    if (!(error instanceof CorruptionError)) throw error;
    const file = path.join(dir, 'FORMAT');
    const end = readFile(nodeIo, file)?.length ?? 0;
    damage.push({ file, position: 0, end, action: 'refuse', reason: error.message });
  }
  const jobs = listJobs(dir, formatVersion, damage);
  const total = jobs.reduce((sum, job) => sum + job.size, 0);
  let checked = 0;
  options.onProgress?.(0, total);
  for (const job of jobs) {
    options.signal?.throwIfAborted();
    const buf = readFile(nodeIo, job.file) ?? Buffer.alloc(0);
    for (const found of job.check(buf)) {
      damage.push({ file: job.file, namespace: job.namespace, log: job.log, ...found });
    }
    checked += job.size;
    options.onProgress?.(checked, total);
    // Lets a signal or a progress redraw through between files.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { formatVersion, files: jobs.length, bytes: total, damage };
}

function sizeOf(file: string): number {
  return readFile(nodeIo, file)?.length ?? 0;
}

/** A file or directory that is missing: what a reopen does about it. */
function missing(file: string, action: DamageAction, reason: string): Omit<Damage, 'namespace'> {
  return { file, position: 0, end: 0, action, reason };
}

/** Every file to check, in directory order; what is missing is added to `damage` at once. */
function listJobs(dir: string, formatVersion: number, damage: Damage[]): Job[] {
  const jobs: Job[] = [];
  for (const namespace of listNamedDirs(nodeIo, dir)) {
    const nsDir = path.join(dir, encodeName(namespace));
    const logs = listNamedDirs(nodeIo, nsDir);
    const meta = path.join(nsDir, '~meta');
    // Before format 5 there is no list of logs: the upgrade makes it of the logs present.
    const listed = formatVersion >= 5 ? checkLogList(nsDir, namespace, logs, damage) : undefined;
    if (nodeIo.existsSync(meta)) {
      jobs.push({ file: meta, size: sizeOf(meta), check: checkMeta, namespace });
    } else if (logs.length > 0 || nodeIo.existsSync(path.join(nsDir, LOG_LIST_FILE))) {
      const previous = nodeIo.existsSync(meta + PREVIOUS_SUFFIX);
      damage.push({
        file: meta,
        position: 0,
        end: 0,
        action: previous ? 'restore' : 'skip',
        reason: previous
          ? `is missing; restored from ${path.basename(meta)}${PREVIOUS_SUFFIX}, without the changes made since`
          : 'is missing: the metadata of the namespace is lost',
        namespace,
      });
    }
    for (const log of logs) {
      const logDir = path.join(nsDir, encodeName(log));
      // From format 4 a log has its segment list; one without it is lost only if `~logs` says so.
      const lists =
        formatVersion >= 4 ? { expected: listed?.get(log) === true, damage } : undefined;
      jobs.push(...logJobs(logDir, namespace, log, lists));
    }
  }
  return jobs;
}

/**
 * Checks a namespace's `~logs` against the logs present, adding what a reopen reports to
 * `damage`; returns, for each listed log, whether it has its segment list.
 */
function checkLogList(
  nsDir: string,
  namespace: string,
  present: readonly string[],
  damage: Damage[],
): Map<string, boolean> | undefined {
  const file = path.join(nsDir, LOG_LIST_FILE);
  const list = readLogList(nodeIo, file);
  const lost =
    'the logs present are taken as the whole namespace, so a log lost with it is not found';
  if (list === 'damaged') {
    damage.push({
      ...missing(file, 'relist', `is damaged: ${lost}`),
      end: sizeOf(file),
      namespace,
    });
    return undefined;
  }
  if (list === undefined) {
    if (present.length > 0) {
      damage.push({ ...missing(file, 'relist', `is missing: ${lost}`), namespace });
    }
    return undefined;
  }
  const here = new Set(present);
  for (const { name } of list) {
    // A hashed directory without its `~name` is named again from the list on open.
    if (here.has(name) || nodeIo.isDirectorySync(path.join(nsDir, encodeName(name)))) continue;
    const reason = 'the log is missing: the records it held are lost';
    damage.push({
      ...missing(path.join(nsDir, encodeName(name)), 'drop', reason),
      namespace,
      log: name,
    });
  }
  return new Map(list.map((entry) => [entry.name, entry.segmentList]));
}

/**
 * Checks a log's `~segments` against the segment files present (`ids`), adding what a reopen
 * reports to `damage`; a missing list is reported when it is `expected`.
 */
function checkSegmentList(
  dir: string,
  ids: readonly number[],
  namespace: string,
  log: string,
  { expected, damage }: SegmentListCheck,
): void {
  const file = path.join(dir, LIST_FILE);
  const list = readSegmentList(nodeIo, file);
  const lost =
    'the segment files present are taken as the whole log, so a segment lost with it is not found';
  if (list === undefined && !expected) return;
  if (list === 'damaged' || list === undefined) {
    const how = list === 'damaged' ? 'damaged' : 'missing';
    damage.push({
      ...missing(file, 'relist', `is ${how}: ${lost}`),
      end: sizeOf(file),
      namespace,
      log,
    });
    return;
  }
  const here = new Set(ids);
  for (const id of list.ids) {
    if (here.has(id)) continue;
    const segment = path.join(dir, segmentFileName(id));
    const reason = 'the segment is missing: the records it held are lost';
    damage.push({ ...missing(segment, 'drop', reason), namespace, log });
  }
}

/** How to check a log's segment list. */
interface SegmentListCheck {
  readonly expected: boolean;
  readonly damage: Damage[];
}

/** The jobs of one log; with `lists`, its segment list is checked too. */
function logJobs(dir: string, namespace: string, log: string, lists?: SegmentListCheck): Job[] {
  const jobs: Job[] = [];
  const add = (name: string, check: Job['check']) => {
    const file = path.join(dir, name);
    if (nodeIo.existsSync(file)) jobs.push({ file, size: sizeOf(file), check, namespace, log });
  };
  add(OPTIONS_FILE, (buf) => {
    try {
      parseLogOptions(buf, path.join(dir, OPTIONS_FILE));
      return [];
    } catch (error) {
      return [{ position: 0, end: buf.length, action: 'refuse', reason: (error as Error).message }];
    }
  });
  const ids = nodeIo
    .readdirSync(dir)
    .filter((entry) => /^\d{10}\.seg$/.test(entry))
    .map((entry) => Number(entry.slice(0, 10)))
    .sort((a, b) => a - b);
  if (lists) checkSegmentList(dir, ids, namespace, log, lists);
  const marks = path.join(dir, MARKS_FILE);
  const holdsRecords = ids.some((id) => sizeOf(path.join(dir, segmentFileName(id))) > FILE_HEADER);
  if (
    lists &&
    nodeIo.existsSync(path.join(dir, LIST_FILE)) &&
    !nodeIo.existsSync(marks) &&
    holdsRecords
  ) {
    const reason = 'the deletion marks are missing: records deleted before may be delivered again';
    lists.damage.push({ ...missing(marks, 'drop', reason), namespace, log });
  }
  const order = { lastOffset: 0 };
  for (const [i, id] of ids.entries()) {
    const name = segmentFileName(id).slice(0, -4);
    add(`${name}.seg`, (buf) => checkSegment(buf, i === ids.length - 1, order));
    const segment = path.join(dir, `${name}.seg`);
    add(`${name}.idx`, (buf) => checkIndex(buf, segment));
  }
  add(MARKS_FILE, (buf) => {
    const end = readMarks(buf, () => {});
    if (end === buf.length) return [];
    return [{ position: end, end: buf.length, action: 'cut', reason: 'a batch of marks is torn' }];
  });
  return jobs;
}

function checkMeta(buf: Buffer): Omit<Damage, 'file'>[] {
  const read = readMetaRecords(buf, () => {});
  const found: Omit<Damage, 'file'>[] = read.damaged.map(({ position, end }) => ({
    position,
    end,
    action: 'skip',
    reason: 'damaged metadata records',
  }));
  if (read.tornAt >= 0) {
    found.push({
      position: read.tornAt,
      end: buf.length,
      action: 'cut',
      reason: 'a metadata record is torn (a write never confirmed)',
    });
  }
  return found;
}

function checkIndex(buf: Buffer, segment: string): Omit<Damage, 'file'>[] {
  const fd = nodeIo.openSync(segment, 'r');
  const head = Buffer.alloc(FILE_HEADER);
  let size: number;
  try {
    readFully(nodeIo, fd, head, 0, FILE_HEADER, 0);
    size = nodeIo.sizeSync(fd);
  } finally {
    nodeIo.closeSync(fd);
  }
  const header = parseFileHeader(head);
  // A segment without a header is reported by its own check; its index is then moot.
  if (!header || indexState(buf, header, size) !== 'damaged') return [];
  return [
    {
      position: 0,
      end: buf.length,
      action: 'rebuild',
      reason: 'the index fails its checksum or is not an index',
    },
  ];
}

/**
 * Checks every run of a segment file. `order` carries the last offset of the log's previous
 * segment, which this one's first offset must be past.
 */
function checkSegment(
  buf: Buffer,
  tail: boolean,
  order: { lastOffset: number },
): Omit<Damage, 'file'>[] {
  const header = parseFileHeader(buf.subarray(0, FILE_HEADER));
  const whole = (reason: string) => [
    { position: 0, end: buf.length, action: 'refuse' as const, reason },
  ];
  if (!header) return whole('the segment has no valid header');
  if (header.layout !== SEGMENT_LAYOUT && header.layout !== FRAME_CHECKSUM_LAYOUT) {
    return whole(`the segment has layout ${header.layout}`);
  }
  if (header.firstOffset <= order.lastOffset) {
    return whole(`the segment's first offset ${header.firstOffset} overlaps the previous segment`);
  }
  const found: Omit<Damage, 'file'>[] = [];
  const n = buf.length;
  let span = 0;
  for (let at = FILE_HEADER; at < n; ) {
    const run = checkRun(header.layout, buf, at, n, n);
    if (run > 0) {
      for (const end = at + run; at < end; at += FRAME_HEADER + u32(buf, at)) {
        const delta = frameDelta(buf, at);
        if (delta < span) {
          found.push({ position: at, end, action: 'refuse', reason: 'a record is out of order' });
        }
        span = delta + 1;
      }
      continue;
    }
    const reason = run === INCOMPLETE ? 'a record is cut short' : 'a record fails its checksum';
    const intact = intactRunAfter(header.layout, buf.subarray(at), n - at);
    if (intact === NONE_INTACT) {
      found.push({ position: at, end: n, action: tail ? 'cut' : 'refuse', reason });
      break;
    }
    if (intact === SEARCH_GAVE_UP) {
      // A reopen does not cut what it could not tell from damage.
      const unknown = `${reason}, and whether intact records follow is not known`;
      found.push({ position: at, end: n, action: 'refuse', reason: unknown });
      break;
    }
    found.push({ position: at, end: at + intact, action: 'refuse', reason });
    at += intact;
  }
  order.lastOffset = header.firstOffset + span - 1;
  return found;
}
