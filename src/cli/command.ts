/**
 * What every `mqlite` subcommand is made of. Commands write through {@link CliIo} rather than
 * `process.stdout`, so the same code runs in the binary and under test.
 */
import type { Writable } from 'node:stream';

/** Where a command reads its environment and writes its output. */
export interface CliIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: NodeJS.ProcessEnv;
  /** Whether stderr is a terminal: progress is drawn only there. */
  readonly interactive: boolean;
  /** Aborted by SIGINT or SIGTERM; long-running commands stop cleanly when it fires. */
  readonly signal: AbortSignal;
}

/** One subcommand: `mqlite <name> ...`. */
export interface Command {
  /** One line for `mqlite --help`. */
  readonly summary: string;
  /** The usage text `mqlite <name> --help` prints. */
  readonly usage: string;
  /** Runs the command with the arguments after its name and resolves with the exit code. */
  run(args: readonly string[], io: CliIo): Promise<number>;
}

/** A mistake in how a command was called: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * A directory argument the command cannot read (missing, or not a data directory): printed
 * without the usage, exit code 2.
 */
export class DirectoryError extends Error {
  override name = 'DirectoryError';
}

/** Exit codes, as shells and `sqlite3` use them. */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;
