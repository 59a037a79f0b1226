/**
 * `mqlite inspect <dir>`: what a data directory holds, read as a reopen would find it, changing
 * nothing. It takes no lock, so it also reads a directory a running process holds: it says so,
 * and what that process wrote last may be missing or show as a torn tail.
 */
import path from 'node:path';
import { toJsonTable } from '../exchanges/field-values.js';
import { lvqKey } from '../queues/lvq/key.js';
import { storedOffsets } from '../queues/stream/tracking.js';
import { segmentFiles } from '../storage/fs/index.js';
import { type Command, EXIT } from './command.js';
import { type VhostDirectory, vhostDirectories } from './data-directories.js';
import { parseDirectoryArgs } from './directory-args.js';
import { counted, detailOf, formatBytes, jsonOf, writeJson } from './render.js';
import {
  logsOf,
  messageOf,
  readStoredDirectory,
  type StoredDirectory,
  type StoredEntry,
} from './stored-directory.js';

const USAGE = `Usage: mqlite inspect <dir> [--vhost <name>] [--json]

Lists the queues and exchanges of a data directory: kind, arguments, message counts and bytes,
stream consumers' stored offsets, last-value queue key counts, each log's segment files, and the
messages a delayed exchange holds with when the first falls due, for every vhost 'mqlite serve'
keeps in it (in ~vhosts/), or the one named.
Reads only: the directory is not locked or changed, and a running server may keep it open.

Options:
  --vhost <name>   only this vhost ('/' is the directory itself)
  --json           print one JSON document instead of text; the other vhosts under "vhosts"
`;

interface SegmentReport {
  readonly file: string;
  readonly fileBytes: number;
  readonly firstOffset: number;
  readonly lastOffset: number;
  readonly records: number;
  readonly deleted: number;
}

interface LogReport {
  readonly name: string;
  readonly firstOffset: number;
  readonly nextOffset: number;
  readonly messages: number;
  readonly bytes: number;
  readonly segments: readonly SegmentReport[];
}

interface QueueReport {
  readonly name: string;
  /** Undefined for a namespace no queue declaration describes. */
  readonly kind: string | undefined;
  readonly durable?: boolean;
  readonly exclusive?: boolean;
  readonly autoDelete?: boolean;
  readonly arguments?: unknown;
  readonly messages: number;
  readonly bytes: number;
  readonly logs: readonly LogReport[];
  /** A stream's consumers' stored offsets. */
  readonly offsets?: readonly { tag: string; offset: number }[];
  /** A last-value queue's distinct keys. */
  readonly keys?: number;
  /** Why a reopen would keep the queue apart (quarantined), when it would. */
  readonly damaged?: string;
}

async function reportLog(stored: StoredDirectory, entry: StoredEntry, name: string) {
  const log = await stored.openLog(entry, name);
  const report: LogReport = {
    name,
    firstOffset: log.firstOffset,
    nextOffset: log.nextOffset,
    messages: log.count,
    bytes: log.bytes,
    segments: segmentFiles(log).map((seg) => ({
      file: seg.file,
      fileBytes: seg.fileSize,
      firstOffset: seg.firstOffset,
      lastOffset: seg.lastOffset,
      records: seg.count,
      deleted: seg.deletedCount,
    })),
  };
  return { log, report };
}

async function reportQueue(stored: StoredDirectory, entry: StoredEntry): Promise<QueueReport> {
  const { declaration } = entry;
  const logs: LogReport[] = [];
  let keys: number | undefined;
  let damaged = entry.error?.message;
  try {
    for (const name of await logsOf(entry)) {
      const { log, report } = await reportLog(stored, entry, name);
      logs.push(report);
      if (declaration?.kind === 'lvq' && declaration.lvqKey !== undefined) {
        const seen = new Set<unknown>();
        for (const cursor = log.cursor(log.firstOffset); cursor.next(); ) {
          const header = messageOf(cursor.record)?.properties.headers?.[declaration.lvqKey];
          const key = header === undefined ? undefined : lvqKey(header);
          if (key !== undefined) seen.add(key);
        }
        keys = seen.size;
      }
    }
  } catch (error) {
    damaged = (error as Error).message;
  }
  const meta = entry.namespace?.meta;
  return {
    name: entry.name,
    kind: declaration?.kind,
    ...(declaration && {
      durable: declaration.durable,
      exclusive: declaration.exclusive,
      autoDelete: declaration.autoDelete,
      arguments: jsonOf(toJsonTable(declaration.arguments, true)),
    }),
    messages: logs.reduce((sum, log) => sum + log.messages, 0),
    bytes: logs.reduce((sum, log) => sum + log.bytes, 0),
    logs,
    ...(declaration?.kind === 'stream' && meta && { offsets: storedOffsets(meta) }),
    ...(keys !== undefined && { keys }),
    ...(damaged !== undefined && { damaged }),
  };
}

function holderText(holder: number | undefined): string {
  if (holder === undefined) return 'not in use';
  if (holder === 0) return 'locked by a LOCK file that names no process';
  return `held by pid ${holder}: its latest writes may not show`;
}

/** What a delayed exchange holds, by exchange name. */
type DelayedReports = ReadonlyMap<string, { messages: number; nextDue: number | null }>;

async function delayedReports(stored: StoredDirectory): Promise<DelayedReports> {
  const reports = new Map<string, { messages: number; nextDue: number | null }>();
  for (const name of Object.keys(stored.exchanges)) {
    const held = await stored.delayed(name);
    if (held) reports.set(name, held);
  }
  return reports;
}

/** The text report of one vhost's directory; `vhost` is named unless it is `/` alone. */
function textOf(
  stored: StoredDirectory,
  queues: readonly QueueReport[],
  delayed: DelayedReports,
  vhost: string | undefined,
): string {
  const out: string[] = [];
  const { formatVersion, holder } = stored.snapshot;
  const named = vhost === undefined ? '' : `vhost '${vhost}', `;
  out.push(
    `Data directory ${stored.dir} (${named}format ${formatVersion}, ${holderText(holder)})`,
    '',
  );
  const declared = queues.filter((q) => q.kind !== undefined);
  const others = queues.filter((q) => q.kind === undefined);
  const describe = (q: QueueReport) => {
    const flags = [
      q.durable && 'durable',
      q.exclusive && 'exclusive',
      q.autoDelete && 'auto-delete',
    ];
    const kind = q.kind === undefined ? '' : `  ${[q.kind, ...flags.filter(Boolean)].join(', ')}`;
    out.push(`  ${q.name}${kind}`);
    const args = JSON.stringify(q.arguments ?? {});
    if (args !== '{}') out.push(`    arguments  ${args}`);
    out.push(`    messages   ${q.messages} (${formatBytes(q.bytes)})`);
    if (q.keys !== undefined) out.push(`    keys       ${q.keys}`);
    for (const { tag, offset } of q.offsets ?? []) out.push(`    offset     ${tag}: ${offset}`);
    if (q.damaged) out.push(`    DAMAGED    ${q.damaged} (a reopen keeps the queue apart)`);
    for (const log of q.logs) {
      const range =
        log.nextOffset > log.firstOffset
          ? `offsets ${log.firstOffset}..${log.nextOffset - 1}`
          : `empty, next offset ${log.nextOffset}`;
      out.push(
        `    log ${log.name}: ${log.messages} messages, ${formatBytes(log.bytes)}, ${range}`,
      );
      for (const seg of log.segments) {
        const records = `${counted(seg.records, 'record')}${seg.deleted > 0 ? ` (${seg.deleted} deleted)` : ''}`;
        out.push(
          `      ${path.relative(stored.dir, seg.file)}  ${formatBytes(seg.fileBytes)}  ${records}`,
        );
      }
    }
  };
  out.push(declared.length > 0 ? 'Queues' : 'Queues: none');
  declared.forEach(describe);
  const exchanges = Object.entries(stored.exchanges);
  out.push('', exchanges.length > 0 ? 'Exchanges' : 'Exchanges: none');
  for (const [name, exchange] of exchanges) {
    out.push(`  ${name}  ${exchange.type}${exchange.durable ? ', durable' : ''}`);
    const held = delayed.get(name);
    if (held) {
      const next =
        held.nextDue === null ? '' : `, next due ${new Date(held.nextDue).toISOString()}`;
      out.push(`    delayed    ${counted(held.messages, 'message')}${next}`);
    }
    if (Object.keys(exchange.arguments).length > 0) {
      out.push(`    arguments  ${JSON.stringify(exchange.arguments)}`);
    }
    for (const binding of exchange.bindings) {
      out.push(`    → ${binding.destination}  routing key '${binding.routingKey}'`);
    }
  }
  if (others.length > 0) {
    out.push('', 'Namespaces of no declared queue');
    others.forEach(describe);
  }
  if (stored.losses.length > 0) {
    out.push('', 'A reopen would repair');
    for (const loss of stored.losses) out.push(`  ${detailOf(loss)}`);
  }
  return `${out.join('\n')}\n`;
}

/** One vhost's directory, read: its JSON document and its text. */
async function inspectVhost(
  { vhost, dir }: VhostDirectory,
  named: boolean,
): Promise<{ json: Record<string, unknown>; text: string }> {
  const stored = await readStoredDirectory(dir);
  try {
    const queues: QueueReport[] = [];
    for (const entry of stored.entries) queues.push(await reportQueue(stored, entry));
    const delayed = await delayedReports(stored);
    const json = {
      dir: stored.dir,
      vhost,
      formatVersion: stored.snapshot.formatVersion,
      holder: stored.snapshot.holder ?? null,
      queues: queues.filter((q) => q.kind !== undefined),
      exchanges: Object.entries(stored.exchanges).map(([name, exchange]) => ({
        name,
        ...exchange,
        ...(delayed.has(name) && { delayed: delayed.get(name) }),
      })),
      namespaces: queues.filter((q) => q.kind === undefined),
      recovery: stored.losses.map((loss) => ({
        kind: loss.kind,
        file: loss.file ?? null,
        position: loss.position ?? null,
        end: loss.end ?? null,
        message: detailOf(loss),
      })),
    };
    return { json, text: textOf(stored, queues, delayed, named ? vhost : undefined) };
  } finally {
    await stored.close();
  }
}

export const inspect: Command = {
  summary: 'list the queues, exchanges, messages and files of a data directory',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseDirectoryArgs(args, { vhost: { type: 'string' } });
    const vhosts = vhostDirectories(positionals[0]!, values.vhost);
    const named = vhosts.length > 1 || vhosts[0]!.vhost !== '/';
    const reports = [];
    for (const vhost of vhosts) reports.push(await inspectVhost(vhost, named));
    const [first, ...others] = reports;
    if (values.json) writeJson(io.stdout, { ...first!.json, vhosts: others.map((r) => r.json) });
    else io.stdout.write(reports.map((r) => r.text).join('\n'));
    return EXIT.ok;
  },
};
