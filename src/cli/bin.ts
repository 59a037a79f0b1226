#!/usr/bin/env node
/** The `mqlite` executable: the process's own streams and signals handed to {@link main}. */
import type { CliIo } from './command.js';
import { main } from './main.js';

/**
 * One Ctrl-C can reach the process twice: from the terminal, to its whole process group, and
 * from a launcher (npx, npm run) that passes its own copy on. A signal this soon after the first
 * is that same request, not a second one.
 */
const SAME_REQUEST_MS = 1000;

const controller = new AbortController();
let firstSignalAt: number | undefined;
// The first signal asks the command to stop cleanly; a later one ends the process at once.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (firstSignalAt === undefined) {
      firstSignalAt = Date.now();
      controller.abort(signal);
    } else if (Date.now() - firstSignalAt > SAME_REQUEST_MS) process.exit(130);
  });
}

const io: CliIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  interactive: process.stderr.isTTY === true,
  signal: controller.signal,
};

process.exitCode = await main(process.argv.slice(2), io);
