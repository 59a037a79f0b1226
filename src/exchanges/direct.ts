import { DestinationSet } from './destination-set.js';
import type { Binding, ExchangeRouter } from './types.js';

/** Direct: a message goes to the destinations bound with exactly its routing key. O(1) per route. */
export class DirectRouter implements ExchangeRouter {
  readonly #byKey = new Map<string, DestinationSet>();

  add(_id: string, binding: Binding): void {
    let set = this.#byKey.get(binding.routingKey);
    if (!set) this.#byKey.set(binding.routingKey, (set = new DestinationSet()));
    set.add(binding.destination);
  }

  remove(_id: string, binding: Binding): void {
    const set = this.#byKey.get(binding.routingKey);
    if (!set) return;
    set.delete(binding.destination);
    if (set.size === 0) this.#byKey.delete(binding.routingKey);
  }

  route(routingKey: string, _headers: unknown, out: Set<string>): void {
    this.#byKey.get(routingKey)?.addTo(out);
  }
}
