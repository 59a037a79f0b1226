/**
 * The metadata store of a memory namespace: JSON values by key, frozen copies of what was set,
 * listed by prefix in key order.
 */
import { ClosedError } from '../errors.js';
import { frozenJsonCopy } from './json-value.js';
import { checkName, type Guard, RESOLVED } from './memory-handle.js';
import type { JsonValue, MetaStore } from './types.js';

/** The metadata of one namespace; it outlives the handles opened on it. */
export class MetaData {
  readonly map = new Map<string, JsonValue>();
  /** Keys in order, rebuilt lazily after a key is added or removed. */
  sorted: string[] | null = [];
}

/** The metadata store of one open namespace handle. */
export class MemoryMeta implements MetaStore {
  readonly #data: MetaData;
  readonly #guard: Guard;

  constructor(data: MetaData, guard: Guard) {
    this.#data = data;
    this.#guard = guard;
  }

  get(key: string): JsonValue | undefined {
    this.#guard.check();
    return this.#data.map.get(key);
  }

  set(key: string, value: JsonValue): void {
    this.#guard.check();
    checkName(key, 'metadata key');
    const frozen = frozenJsonCopy(value);
    const map = this.#data.map;
    if (!map.has(key)) this.#data.sorted = null;
    map.set(key, frozen);
  }

  delete(key: string): void {
    this.#guard.check();
    if (this.#data.map.delete(key)) this.#data.sorted = null;
  }

  entries(prefix = ''): IterableIterator<[string, JsonValue]> {
    this.#guard.check();
    checkName(prefix, 'metadata prefix');
    const data = this.#data;
    if (data.sorted === null) data.sorted = [...data.map.keys()].sort();
    const keys = data.sorted;
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    let end = lo;
    while (end < keys.length && keys[end]!.startsWith(prefix)) end++;
    return snapshot(data.map, keys.slice(lo, end));
  }

  sync(): Promise<void> {
    return this.#guard.closed
      ? Promise.reject(new ClosedError(`${this.#guard.what} is closed`))
      : RESOLVED;
  }
}

/** Yields the keys as they were when `entries()` was called, skipping any deleted since. */
function* snapshot(
  map: Map<string, JsonValue>,
  keys: string[],
): Generator<[string, JsonValue], undefined, undefined> {
  for (const key of keys) {
    const value = map.get(key);
    if (value !== undefined) yield [key, value];
  }
}
