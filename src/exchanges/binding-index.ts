/**
 * The bindings of a registry's exchanges, kept in step with their routers, and the reverse index
 * from each destination to the exchanges that bind it, so a deleted destination unbinds fast.
 */
import type { FieldTable } from '../message/types.js';
import { exchangeOfKey } from './destination-key.js';
import type { ExchangeState } from './exchange-state.js';
import { fieldKey } from './field-values.js';
import type { Binding } from './types.js';

export class BindingIndex {
  /** destination → source exchange → number of bindings, to unbind a deleted destination fast. */
  readonly #sources = new Map<string, Map<string, number>>();

  /** The exchanges binding `destination` (a destination key), with how many bindings each. */
  sources(destination: string): ReadonlyMap<string, number> | undefined {
    return this.#sources.get(destination);
  }

  /** Every destination key some exchange binds. */
  destinations(): IterableIterator<string> {
    return this.#sources.keys();
  }

  /** Adds a binding to its source exchange; false when that exchange has it already. */
  add(state: ExchangeState, binding: Binding): boolean {
    const id = bindingId(binding.destination, binding.routingKey, binding.args);
    if (state.bindings.has(id)) return false;
    state.router.add(id, binding); // throws on invalid arguments before anything changed
    state.bindings.set(id, binding);
    if (exchangeOfKey(binding.destination) !== undefined) state.exchangeBindings++;
    let sources = this.#sources.get(binding.destination);
    if (!sources) this.#sources.set(binding.destination, (sources = new Map()));
    sources.set(state.name, (sources.get(state.name) ?? 0) + 1);
    return true;
  }

  remove(state: ExchangeState, id: string, binding: Binding): void {
    state.router.remove(id, binding);
    state.bindings.delete(id);
    if (exchangeOfKey(binding.destination) !== undefined) state.exchangeBindings--;
    this.untrack(binding.destination, state.name);
  }

  /** Forgets one binding of `source` to `destination` (its exchange is going). */
  untrack(destination: string, source: string): void {
    const sources = this.#sources.get(destination);
    const n = sources?.get(source);
    if (!sources || n === undefined) return;
    if (n > 1) sources.set(source, n - 1);
    else if (sources.delete(source) && sources.size === 0) this.#sources.delete(destination);
  }
}

export function bindingId(
  destination: string,
  routingKey: string,
  args: Readonly<FieldTable>,
): string {
  return `${destination}\u0000${routingKey}\u0000${fieldKey(args)}`;
}
