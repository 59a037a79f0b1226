/** `node:util`'s parseArgs for the commands, with the nearest known option for an unknown one. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { didYouMean } from '../queues/unknown-names.js';
import { UsageError } from './command.js';

/**
 * Parses as `parseArgs(config)` does.
 * @throws UsageError for an unknown option, as "unknown option '--prot' (did you mean
 *   '--port'?)"; parseArgs' own errors for the other mistakes.
 */
export function parseCommandArgs<T extends ParseArgsConfig>(
  config: T,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw error;
    const option = /'([^']+)'/.exec((error as Error).message)?.[1] ?? '';
    const known = Object.keys(config.options ?? {}).map((name) => `--${name}`);
    throw new UsageError(`unknown option '${option}'${didYouMean(option, known)}`);
  }
}
