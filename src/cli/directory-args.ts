/**
 * The arguments of the commands that read a data directory (`inspect`, `peek`, `verify`): the
 * directory first, then what else the command names, and `--json` beside its own options.
 */
import type { ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from './command.js';
import { parseCommandArgs } from './parse-args.js';

type Options = NonNullable<ParseArgsConfig['options']>;

const JSON_OPTION = { json: { type: 'boolean', default: false } } as const;

/** What `parseArgs` makes of a command's arguments with `--json` and the options `T`. */
type Parsed<T extends Options> = ReturnType<
  typeof parseArgs<{
    args: string[];
    options: typeof JSON_OPTION & T;
    allowPositionals: true;
    strict: true;
  }>
>;

/**
 * Parses `args` with `--json` and `options`. Exactly `expected.count` positionals are expected
 * (one, the directory, by default), else a usage mistake worded `expected <what>`; an unknown
 * option is a usage mistake too.
 */
export function parseDirectoryArgs<const T extends Options = Record<never, never>>(
  args: readonly string[],
  options?: T,
  expected: { readonly count: number; readonly what: string } = {
    count: 1,
    what: 'one data directory',
  },
): Parsed<T> {
  const { values, positionals } = parseCommandArgs({
    args: [...args],
    options: { ...JSON_OPTION, ...(options as T) },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== expected.count) throw new UsageError(`expected ${expected.what}`);
  return { values, positionals };
}
