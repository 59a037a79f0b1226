/**
 * Queues declared at startup from a JSON config, as the Qpid broker reads its virtual-host
 * config. The file (or object) lists queues by name with the same options `broker.queue()` takes
 * — flags, `arguments`, camelCase sugar — and a `type` that may also say `lvq` or `priority`:
 *
 * ```json
 * {
 *   "queues": {
 *     "prices": { "type": "lvq", "lvqKey": "ISIN" },
 *     "jobs": { "maxPriority": 9, "arguments": { "x-message-ttl": 60000 } },
 *     "events": { "type": "stream", "maxAge": "7D" }
 *   }
 * }
 * ```
 *
 * `queues` may also be an array of entries with a `name`. Any error names the config and the
 * queue, and keeps the code of the underlying error.
 */
import { readFile } from 'node:fs/promises';
import { MqliteError, withContext } from '../errors.js';
import type { QueueDeclareOptions } from './declare-options.js';

/** The options of one queue in a config: those of `broker.queue()` except `passive`. */
export type QueueConfig = Omit<QueueDeclareOptions, 'passive' | 'type'> & {
  /** `classic` (default), `stream`, `lvq` (same as `lvq: true`) or `priority` (needs `maxPriority`). */
  type?: 'classic' | 'stream' | 'lvq' | 'priority';
};

/** A broker config: the queues to declare when the broker opens. */
export interface BrokerConfig {
  queues?: Record<string, QueueConfig> | (QueueConfig & { name: string })[];
}

/** One queue the config declares. */
export interface ConfiguredQueue {
  readonly name: string;
  readonly options: QueueDeclareOptions;
}

/** A parsed config: where it came from (for messages) and its queues in order. */
export interface LoadedConfig {
  readonly source: string;
  readonly queues: readonly ConfiguredQueue[];
}

/**
 * Reads a config from a JSON file path or takes it as an object, and returns its queues with
 * their `type` turned into declare options. Option values are checked when declared.
 * @throws TypeError for a malformed config (not JSON, wrong shape), naming the file and queue.
 */
export async function loadConfig(config: string | URL | BrokerConfig): Promise<LoadedConfig> {
  let source = 'config';
  let value: unknown = config;
  if (typeof config === 'string' || config instanceof URL) {
    source = `config ${String(config)}`;
    const text = await readFile(config, 'utf8');
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new TypeError(`${source}: not valid JSON: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  if (!isPlainObject(value)) throw new TypeError(`${source}: must be a JSON object`);
  for (const key of Object.keys(value)) {
    if (key !== 'queues') throw new TypeError(`${source}: unknown key '${key}'`);
  }
  const queues = value.queues;
  const entries: [string, unknown][] = [];
  if (Array.isArray(queues)) {
    queues.forEach((entry, i) => {
      if (!isPlainObject(entry) || typeof entry.name !== 'string') {
        throw new TypeError(`${source}: queues[${i}] must be an object with a string 'name'`);
      }
      const { name, ...options } = entry;
      entries.push([name, options]);
    });
  } else if (isPlainObject(queues)) {
    entries.push(...Object.entries(queues));
  } else if (queues !== undefined) {
    throw new TypeError(`${source}: 'queues' must be an object by queue name or an array`);
  }
  const seen = new Set<string>();
  const out: ConfiguredQueue[] = [];
  for (const [name, options] of entries) {
    if (seen.has(name)) throw new TypeError(`${source}: queue '${name}' is listed twice`);
    seen.add(name);
    if (!isPlainObject(options)) {
      throw new TypeError(`${source}: queue '${name}' must be an object of queue options`);
    }
    if ('passive' in options) {
      throw new TypeError(
        `${source}: queue '${name}': option 'passive' has no meaning in a config`,
      );
    }
    out.push({ name, options: typeOption(source, name, options) });
  }
  return { source, queues: out };
}

/** Turns the config-only `type` values into the options they stand for. */
function typeOption(source: string, name: string, options: Record<string, unknown>) {
  const { type, ...rest } = options;
  switch (type) {
    case undefined:
    case 'classic':
    case 'stream':
      return options as QueueDeclareOptions;
    case 'lvq':
      return (rest.lvqKey === undefined ? { ...rest, lvq: true } : rest) as QueueDeclareOptions;
    case 'priority':
      if (rest.maxPriority === undefined && !hasArgument(rest, 'x-max-priority')) {
        throw new TypeError(`${source}: queue '${name}': type 'priority' needs 'maxPriority'`);
      }
      return rest as QueueDeclareOptions;
    default:
      throw new TypeError(
        `${source}: queue '${name}': option 'type' must be 'classic', 'stream', 'lvq' or 'priority', got ${JSON.stringify(type)}`,
      );
  }
}

function hasArgument(options: Record<string, unknown>, arg: string): boolean {
  return isPlainObject(options.arguments) && options.arguments[arg] !== undefined;
}

/**
 * The error to report when declaring a configured queue failed: an error of the same class (and
 * for an MqliteError the same `code` and `replyCode`), its message prefixed with the config and
 * queue.
 */
export function configError(source: string, queue: string, error: unknown): Error {
  const where = `${source}: queue '${queue}'`;
  if (error instanceof MqliteError) return withContext(error, where);
  if (error instanceof RangeError)
    return new RangeError(`${where}: ${error.message}`, { cause: error });
  if (error instanceof Error) return new TypeError(`${where}: ${error.message}`, { cause: error });
  return new TypeError(`${where}: ${String(error)}`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
