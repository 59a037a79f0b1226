/**
 * `mqlite <command>`: finds the subcommand and runs it. Each command is imported only when it
 * runs, so `mqlite verify` never loads the AMQP server.
 */
import { createRequire } from 'node:module';
import { type CliIo, type Command, DirectoryError, EXIT, UsageError } from './command.js';

/** Every subcommand by name, loaded on first use. */
const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  inspect: () => import('./inspect.js').then((m) => m.inspect),
  list: () => import('./list.js').then((m) => m.list),
  peek: () => import('./peek.js').then((m) => m.peek),
  serve: () => import('./serve.js').then((m) => m.serve),
  verify: () => import('./verify.js').then((m) => m.verify),
};

async function overview(): Promise<string> {
  const names = Object.keys(COMMANDS);
  const width = Math.max(0, ...names.map((name) => name.length));
  const lines: string[] = [];
  for (const name of names)
    lines.push(`  ${name.padEnd(width)}  ${(await COMMANDS[name]!()).summary}`);
  return [
    'Usage: mqlite <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    "'mqlite <command> --help' shows the options of a command.",
    '',
  ].join('\n');
}

function version(): string {
  // dist/cli/main.js and src/cli/main.ts both sit two levels below package.json.
  const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };
  return pkg.version;
}

/** Runs `mqlite` with `argv` (the arguments after the binary's name); resolves with the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === 'help' && rest[0] !== undefined) return main([rest[0], '--help'], io);
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout).write(await overview());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-v') {
    io.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    io.stderr.write(`mqlite: unknown command '${name}'. Run 'mqlite --help' for the list.\n`);
    return EXIT.usage;
  }
  const command = await load();
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(command.usage);
    return EXIT.ok;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (error instanceof DirectoryError) {
      io.stderr.write(`mqlite ${name}: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof UsageError || isParseArgsError(error)) {
      io.stderr.write(`mqlite ${name}: ${error.message}\n\n${command.usage}`);
      return EXIT.usage;
    }
    io.stderr.write(`mqlite ${name}: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failure;
  }
}

/** An option `node:util`'s parseArgs refused (unknown, missing its value, ...): a usage mistake. */
function isParseArgsError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}
