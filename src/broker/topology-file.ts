/**
 * Reading a config or definitions file: the JSON, and the fields of its entries, each mistake an
 * `InvalidConfigError` naming the file, the entry and the field.
 */
import { readFile } from 'node:fs/promises';
import { InvalidConfigError } from '../errors.js';
import { isPlainTable } from '../table.js';

/** A file's JSON object, and how messages name the file. */
export interface TopologyFile {
  readonly source: string;
  readonly value: Record<string, unknown>;
}

/**
 * Reads a JSON file (given by path) or takes the object itself.
 * @param what `config` or `definitions`, how messages name it.
 */
export async function readTopologyFile(input: unknown, what: string): Promise<TopologyFile> {
  if (typeof input !== 'string' && !(input instanceof URL)) {
    if (!isPlainTable(input)) throw new InvalidConfigError(`${what}: must be a JSON object`);
    return { source: what, value: input };
  }
  const source = `${what} ${String(input)}`;
  let value: unknown;
  try {
    value = JSON.parse(await readFile(input, 'utf8'));
  } catch (error) {
    const why = error instanceof SyntaxError ? 'not valid JSON' : 'cannot be read';
    throw new InvalidConfigError(`${source}: ${why}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (!isPlainTable(value)) throw new InvalidConfigError(`${source}: must be a JSON object`);
  return { source, value };
}

/** The fields of one entry of a file, read with their types checked. */
export class EntryFields {
  readonly #where: string;
  readonly #entry: Record<string, unknown>;

  /**
   * @param where the file and the entry, e.g. `definitions x.json: queue 'jobs'`.
   * @throws InvalidConfigError when the entry is not an object.
   */
  constructor(where: string, entry: unknown) {
    this.#where = where;
    if (!isPlainTable(entry)) throw new InvalidConfigError(`${where}: must be an object`);
    this.#entry = entry;
  }

  /** The entry's own keys. */
  keys(): string[] {
    return Object.keys(this.#entry);
  }

  /** Refuses a key the entry may not have. */
  only(allowed: readonly string[]): void {
    for (const key of this.keys()) {
      if (!allowed.includes(key)) throw this.error(`unknown field '${key}'`);
    }
  }

  has(field: string): boolean {
    return Object.hasOwn(this.#entry, field) && this.#entry[field] !== undefined;
  }

  raw(field: string): unknown {
    return Object.hasOwn(this.#entry, field) ? this.#entry[field] : undefined;
  }

  string(field: string, fallback?: string): string {
    return this.#typed(field, 'a string', (v) => typeof v === 'string', fallback) as string;
  }

  boolean(field: string, fallback: boolean): boolean {
    return this.#typed(field, 'a boolean', (v) => typeof v === 'boolean', fallback) as boolean;
  }

  integer(field: string, fallback: number): number {
    return this.#typed(field, 'an integer', Number.isSafeInteger, fallback) as number;
  }

  /** A JSON object field (an AMQP table), `{}` when absent. */
  table(field: string): Record<string, unknown> {
    return this.#typed(field, 'an object', isPlainTable, {}) as Record<string, unknown>;
  }

  /** An error naming the file, the entry and the field. */
  error(detail: string): InvalidConfigError {
    return new InvalidConfigError(`${this.#where}: ${detail}`);
  }

  #typed(field: string, type: string, ok: (v: unknown) => boolean, fallback?: unknown): unknown {
    const value = this.raw(field);
    if (value === undefined) {
      if (fallback === undefined) throw this.error(`field '${field}' is missing`);
      return fallback;
    }
    if (!ok(value)) {
      throw this.error(`field '${field}' must be ${type}, got ${JSON.stringify(value)}`);
    }
    return value;
  }
}

/**
 * The entries of a section that lists them as an array of objects with a `name`, or (configs
 * only) as an object by name. Absent is empty.
 */
export function namedEntries(
  source: string,
  section: string,
  value: unknown,
  byName: boolean,
): [name: string, entry: unknown, where: string][] {
  if (value === undefined) return [];
  const kind = section === 'policies' ? 'policy' : section.slice(0, -1);
  const out: [string, unknown, string][] = [];
  if (Array.isArray(value)) {
    value.forEach((entry, i) => {
      const name = isPlainTable(entry) ? entry.name : undefined;
      if (typeof name !== 'string') {
        throw new InvalidConfigError(
          `${source}: ${section}[${i}] must be an object with a string 'name'`,
        );
      }
      out.push([name, entry, `${source}: ${kind} '${name}'`]);
    });
  } else if (byName && isPlainTable(value)) {
    for (const [name, entry] of Object.entries(value)) {
      out.push([name, entry, `${source}: ${kind} '${name}'`]);
    }
  } else {
    const shape = byName ? 'an object by name or an array' : 'an array';
    throw new InvalidConfigError(`${source}: '${section}' must be ${shape}`);
  }
  return out;
}

/** Refuses a name listed twice in one section. */
export function refuseDuplicates(entries: readonly (readonly [string, unknown, string])[]): void {
  const seen = new Set<string>();
  for (const [name, , where] of entries) {
    if (seen.has(name)) throw new InvalidConfigError(`${where} is listed twice`);
    seen.add(name);
  }
}
