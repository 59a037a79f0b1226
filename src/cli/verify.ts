/**
 * `mqlite verify <dir>`: checks every checksum of every segment, index, marks file and metadata
 * record of a data directory and reports each damaged region with what a reopen would do about
 * it. Reads only: a directory copied from a crashed machine is checked as it is.
 */
import path from 'node:path';
import { lockHolder } from '../storage/fs/index.js';
import { type Damage, type DamageAction, verifyDataDirectory } from '../storage/fs/verify.js';
import { type Command, EXIT } from './command.js';
import { vhostDirectories } from './data-directories.js';
import { parseDirectoryArgs } from './directory-args.js';
import { progressBar } from './progress.js';
import { formatBytes, writeJson } from './render.js';

const USAGE = `Usage: mqlite verify <dir> [--vhost <name>] [--json]

Checks every checksum of every segment, index, deletion-marks file and metadata record of a
data directory, and every segment and log its lists name, and lists each damaged region or
missing file: file, byte range, and what reopening the directory would do about it, for every
vhost 'mqlite serve' keeps in it (in ~vhosts/), or the one named. Changes nothing. Exits 1 when anything is damaged or missing, 0 when clean. On a terminal, a progress
bar shows on stderr.

Options:
  --vhost <name>   only this vhost ('/' is the directory itself)
  --json           print one JSON document instead of text; the other vhosts under "vhosts"
`;

/** What a reopen does, in words (see `DamageAction`). */
const EFFECT: Readonly<Record<DamageAction, string>> = {
  cut: 'a reopen cuts it off (a torn write, never confirmed)',
  refuse:
    "a reopen refuses the log (MQLITE_CORRUPTION): its queue is kept apart, see 'broker.damaged()'",
  skip: 'a reopen skips it and reads the records around it',
  restore: 'a reopen restores the file from its previous version',
  rebuild: 'a reopen ignores it and rebuilds it from the segment (nothing lost)',
  drop: 'a reopen reports the loss (MQLITE_DATA_LOSS) and opens the queue with what remains',
  relist: 'a reopen reports it (MQLITE_DATA_LOSS) and lists the files present anew',
};

function describe(dir: string, damage: Damage): string {
  const where = damage.end > damage.position ? ` bytes ${damage.position}..${damage.end}` : '';
  return `${path.relative(dir, damage.file)}${where}: ${damage.reason}; ${EFFECT[damage.action]}`;
}

type Report = Awaited<ReturnType<typeof verifyDataDirectory>>;

/** The lines of one vhost's report; `vhost` is named unless it is `/` alone. */
function textOf(top: string, dir: string, report: Report, vhost: string | undefined): string[] {
  const named = vhost === undefined ? '' : `vhost '${vhost}', `;
  return [
    `Checked ${report.files} files, ${formatBytes(report.bytes)}, of ${dir} (${named}format ${report.formatVersion})`,
    ...report.damage.map((damage) => `DAMAGED ${describe(top, damage)}`),
  ];
}

function jsonOf(vhost: string, dir: string, report: Report) {
  return {
    dir,
    vhost,
    formatVersion: report.formatVersion,
    files: report.files,
    bytes: report.bytes,
    clean: report.damage.length === 0,
    damage: report.damage.map((damage) => ({ ...damage, effect: EFFECT[damage.action] })),
  };
}

export const verify: Command = {
  summary: 'check every checksum of a data directory and report damage',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseDirectoryArgs(args, { vhost: { type: 'string' } });
    const vhosts = vhostDirectories(positionals[0]!, values.vhost);
    const top = path.resolve(positionals[0]!);
    const holder = lockHolder(top);
    if (holder) {
      io.stderr.write(
        `mqlite verify: process ${holder} holds ${top}: what it is writing may show as a torn tail\n`,
      );
    }
    const progress = progressBar(io);
    const reports: Report[] = [];
    try {
      for (const [i, { dir }] of vhosts.entries()) {
        reports.push(
          await verifyDataDirectory(dir, {
            onProgress: (done, total) => progress.update(i * total + done, vhosts.length * total),
            signal: io.signal,
          }),
        );
      }
    } catch (error) {
      progress.end();
      if (!io.signal.aborted) throw error;
      io.stderr.write('mqlite verify: stopped before the end (nothing was changed)\n');
      return EXIT.failure;
    }
    progress.end();
    const damaged = reports.reduce((n, report) => n + report.damage.length, 0);
    if (values.json) {
      const [first, ...others] = vhosts.map(({ vhost, dir }, i) => jsonOf(vhost, dir, reports[i]!));
      writeJson(io.stdout, { ...first!, clean: damaged === 0, vhosts: others });
    } else {
      const named = vhosts.length > 1 || vhosts[0]!.vhost !== '/';
      const out = vhosts.flatMap(({ vhost, dir }, i) =>
        textOf(top, dir, reports[i]!, named ? vhost : undefined),
      );
      out.push(
        damaged === 0
          ? 'No damage found.'
          : `${damaged} damaged region${damaged === 1 ? '' : 's'}.`,
      );
      io.stdout.write(`${out.join('\n')}\n`);
    }
    return damaged === 0 ? EXIT.ok : EXIT.failure;
  },
};
