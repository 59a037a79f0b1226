#!/usr/bin/env node
/** The `mqlite` executable: the process's own streams and signals handed to {@link main}. */
import type { CliIo } from './command.js';
import { main } from './main.js';

const controller = new AbortController();
// The first signal asks the command to stop cleanly; a second one ends the process at once.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort(signal);
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
