/**
 * `mqlite verify <dir>`: checks every checksum of every segment, index, marks file and metadata
 * record of a data directory and reports each damaged region with what a reopen would do about
 * it. Reads only: a directory copied from a crashed machine is checked as it is.
 */
import fs from 'node:fs';
import path from 'node:path';
import { lockHolder } from '../storage/fs/index.js';
import { type Damage, type DamageAction, verifyDataDirectory } from '../storage/fs/verify.js';
import { type CliIo, type Command, EXIT } from './command.js';
import { parseDirectoryArgs } from './directory-args.js';
import { progressBar } from './progress.js';
import { formatBytes, writeJson } from './render.js';

const USAGE = `Usage: mqlite verify <dir> [--json]

Checks every checksum of every segment, index, deletion-marks file and metadata record of a
data directory, and every segment and log its lists name, and lists each damaged region or
missing file: file, byte range, and what reopening the directory would do about it. Changes
nothing. Exits 1 when anything is damaged or missing, 0 when clean. On a terminal, a progress
bar shows on stderr.

Options:
  --json   print one JSON document instead of text
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

function printText(
  io: CliIo,
  dir: string,
  report: Awaited<ReturnType<typeof verifyDataDirectory>>,
) {
  const out = [
    `Checked ${report.files} files, ${formatBytes(report.bytes)}, of ${dir} (format ${report.formatVersion})`,
  ];
  for (const damage of report.damage) out.push(`DAMAGED ${describe(dir, damage)}`);
  const n = report.damage.length;
  out.push(n === 0 ? 'No damage found.' : `${n} damaged region${n === 1 ? '' : 's'}.`);
  io.stdout.write(`${out.join('\n')}\n`);
}

export const verify: Command = {
  summary: 'check every checksum of a data directory and report damage',
  usage: USAGE,
  async run(args, io) {
    const { values, positionals } = parseDirectoryArgs(args);
    const dir = path.resolve(positionals[0]!);
    if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      io.stderr.write(
        `mqlite verify: '${positionals[0]}' is not a data directory (no such directory)\n`,
      );
      return EXIT.failure;
    }
    const holder = lockHolder(dir);
    if (holder) {
      io.stderr.write(
        `mqlite verify: process ${holder} holds ${dir}: what it is writing may show as a torn tail\n`,
      );
    }
    const progress = progressBar(io);
    let report: Awaited<ReturnType<typeof verifyDataDirectory>>;
    try {
      report = await verifyDataDirectory(dir, {
        onProgress: (done, total) => progress.update(done, total),
        signal: io.signal,
      });
    } catch (error) {
      progress.end();
      if (!io.signal.aborted) throw error;
      io.stderr.write('mqlite verify: stopped before the end (nothing was changed)\n');
      return EXIT.failure;
    }
    progress.end();
    if (values.json) {
      writeJson(io.stdout, {
        dir,
        formatVersion: report.formatVersion,
        files: report.files,
        bytes: report.bytes,
        clean: report.damage.length === 0,
        damage: report.damage.map((damage) => ({ ...damage, effect: EFFECT[damage.action] })),
      });
    } else printText(io, dir, report);
    return report.damage.length === 0 ? EXIT.ok : EXIT.failure;
  },
};
