/**
 * An index of consumers by the filter values their matches must carry, so a publish finds the
 * consumers that may want a message through its `x-stream-filter-value` list, without asking
 * every consumer. Only filters with `requiredValues` can be indexed; the caller matches the others
 * as usual.
 */
import type { CompiledStreamFilter } from './compile.js';
import { filterValues } from './filter-values.js';
import { FILTER_VALUE_HEADER, type Headers } from './types.js';

interface Entry<Id> {
  readonly id: Id;
  readonly filter: CompiledStreamFilter;
  /** Search number that last visited this entry: visits each entry once per search. */
  seen: number;
}

/**
 * Consumers keyed by `Id`, indexed by their filters' required values. A visitor may insert or
 * remove entries: an entry removed during a search is not visited after its removal.
 */
export class ValueIndex<Id> {
  readonly #byValue = new Map<string, Set<Entry<Id>>>();
  readonly #entries = new Map<Id, Entry<Id>>();
  #epoch = 0;

  /** Number of indexed consumers. */
  get size(): number {
    return this.#entries.size;
  }

  /** Whether `id` is indexed. */
  has(id: Id): boolean {
    return this.#entries.has(id);
  }

  /**
   * Indexes a consumer's filter, replacing an earlier one under the same id. Returns `false` (and
   * indexes nothing) when the filter has no `requiredValues`.
   */
  insert(id: Id, filter: CompiledStreamFilter): boolean {
    const values = filter.requiredValues;
    if (!values) return false;
    this.remove(id);
    const entry: Entry<Id> = { id, filter, seen: -1 };
    for (const value of values) {
      let set = this.#byValue.get(value);
      if (!set) this.#byValue.set(value, (set = new Set()));
      set.add(entry);
    }
    this.#entries.set(id, entry);
    return true;
  }

  /** Removes a consumer; returns whether it was indexed. */
  remove(id: Id): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    for (const value of entry.filter.requiredValues!) {
      const set = this.#byValue.get(value);
      set?.delete(entry);
      if (set?.size === 0) this.#byValue.delete(value);
    }
    this.#entries.delete(id);
    return true;
  }

  /** Removes every consumer. */
  clear(): void {
    this.#byValue.clear();
    this.#entries.clear();
  }

  /** Visits, once each, the indexed consumers whose filter matches a message with these headers. */
  forEachMatch(headers: Headers, visit: (id: Id) => void): void {
    const raw = headers[FILTER_VALUE_HEADER];
    if (raw === undefined || raw === null || this.#entries.size === 0) return;
    const values = filterValues(raw);
    const epoch = ++this.#epoch;
    for (let i = 0; i < values.length; i++) {
      const set = this.#byValue.get(values[i]!);
      if (set === undefined) continue;
      for (const entry of set) {
        if (entry.seen === epoch) continue;
        entry.seen = epoch;
        if (entry.filter.matches(headers)) visit(entry.id);
      }
    }
  }
}
