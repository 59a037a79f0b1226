/**
 * Whether `mqlite serve` outlives the process that started it. A launcher such as npx that is
 * killed (SIGTERM, SIGKILL) does not pass the signal on: its server would be left running,
 * orphaned, holding the data directory's lock. npm runs a package's binary through a shell
 * (`sh -c mqlite ...`) that can outlive npm itself (a SIGINT to npm alone ends npm, not the
 * shell): so when the parent is a shell, its own parent is watched as well.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** How often the parent is looked for: the longest an orphaned server runs on. */
const CHECK_MS = 500;

/**
 * Whether serve stops when its parent goes away: `--exit-with-parent` or
 * `--no-exit-with-parent`, else yes when npm started it (npx, npm exec, npm run set
 * `npm_command`), where the launcher is the parent that goes away.
 */
export function exitsWithParent(
  flags: { exitWithParent: boolean; noExitWithParent: boolean },
  env: NodeJS.ProcessEnv,
): boolean {
  if (flags.exitWithParent) return true;
  if (flags.noExitWithParent) return false;
  return env.npm_command !== undefined;
}

/** Shells npm runs a binary through. */
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh']);

/** The parent process id of `pid`, from /proc (Linux); undefined where it cannot be read. */
function parentOf(pid: number): number | undefined {
  try {
    // "pid (command) state ppid ...": the command may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isSafeInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs a shell, from /proc (Linux); false where it cannot be read. */
function isShell(pid: number): boolean {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    return SHELLS.has(path.basename(argv0));
  } catch {
    return false;
  }
}

/**
 * An abort signal that fires once this process's parent is gone (it was re-parented, so its
 * parent process id changed), or, when the parent is a shell, once the shell's parent is,
 * checked every `CHECK_MS`; the check stops with `until`.
 */
export function parentGone(until: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const parent = process.ppid;
  const grandparent = isShell(parent) ? parentOf(parent) : undefined;
  const timer = setInterval(() => {
    if (
      process.ppid !== parent ||
      (grandparent !== undefined && parentOf(parent) !== grandparent)
    ) {
      controller.abort(new Error('the parent process went away'));
    }
  }, CHECK_MS);
  // The server keeps the process alive, not this check.
  timer.unref();
  const stop = () => clearInterval(timer);
  until.addEventListener('abort', stop, { once: true });
  controller.signal.addEventListener('abort', stop, { once: true });
  return controller.signal;
}
