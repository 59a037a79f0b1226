/**
 * Whether `mqlite serve` outlives the process that started it. A launcher such as npx that is
 * killed (SIGTERM, SIGKILL) does not pass the signal on: its server would be left running,
 * orphaned, holding the data directory's lock.
 */

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

/**
 * An abort signal that fires once this process's parent is gone (it was re-parented, so its
 * parent process id changed), checked every `CHECK_MS`; the check stops with `until`.
 */
export function parentGone(until: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) controller.abort(new Error('the parent process went away'));
  }, CHECK_MS);
  // The server keeps the process alive, not this check.
  timer.unref();
  const stop = () => clearInterval(timer);
  until.addEventListener('abort', stop, { once: true });
  controller.signal.addEventListener('abort', stop, { once: true });
  return controller.signal;
}
