/**
 * Refusing names the library does not know (a subscribe parameter always; queue and consumer
 * arguments in strict mode), with the nearest known name, so that a typo is an error that says
 * what was meant instead of a setting silently ignored.
 */
import { PreconditionFailedError, resourceName } from '../errors.js';

/** The known name nearest to `name` by edit distance, if it is near enough to be a typo. */
export function nearestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** `" (did you mean 'x'?)"`, or `""` when no known name is near. */
export function didYouMean(name: string, known: readonly string[]): string {
  const nearest = nearestName(name, known);
  return nearest === undefined ? '' : ` (did you mean '${nearest}'?)`;
}

/** Throws a TypeError for the first own key of `table` not in `known`. */
export function refuseUnknownKeys(table: object, known: ReadonlySet<string>, what: string): void {
  for (const key of Object.keys(table)) {
    if (!known.has(key)) {
      throw new TypeError(`unknown ${what} '${key}'${didYouMean(key, [...known])}`);
    }
  }
}

/**
 * Strict mode: throws PreconditionFailedError (406) for the first argument of `args` not in
 * `known`, as "unknown argument 'x-max-lenght' for queue 'jobs' in vhost '/' (did you mean
 * 'x-max-length'?)". `what` is "argument" or "consumer argument"; `vhost` the queue's.
 */
export function refuseUnknownArguments(
  args: Readonly<Record<string, unknown>> | undefined,
  known: readonly string[],
  what: string,
  queue: string,
  vhost: string,
): void {
  if (args === undefined) return;
  for (const key of Object.keys(args)) {
    if (args[key] !== undefined && !known.includes(key)) {
      throw new PreconditionFailedError(
        `unknown ${what} '${key}' for ${resourceName('queue', queue, vhost)}${didYouMean(key, known)}`,
      );
    }
  }
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, substitution));
    }
    previous = row;
  }
  return previous[b.length]!;
}
