/**
 * The option keys each `open()` takes: a misspelt option is a TypeError, as it is for
 * `broker.queue()`, instead of a setting silently left at its default.
 */

const COMMON = ['name', 'storage', 'namespace', 'clock', 'arguments', 'onDelete'];
const CLASSIC = [...COMMON, 'deadLetter', 'onError'];

/** Option keys of `open()` by queue kind. */
export const OPEN_OPTIONS = {
  Queue: new Set(CLASSIC),
  PriorityQueue: new Set([...CLASSIC, 'maxPriority']),
  LastValueQueue: new Set([...CLASSIC, 'key']),
  StreamQueue: new Set([...COMMON, 'durable', 'exclusive', 'autoDelete']),
} as const;

/** Throws a TypeError naming the first key of `options` that `kind`'s `open()` does not take. */
export function assertOpenOptions(options: object, kind: keyof typeof OPEN_OPTIONS): void {
  const known = OPEN_OPTIONS[kind];
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(`unknown ${kind}.open() option '${key}'`);
  }
}
