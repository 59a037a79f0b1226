import { DestinationSet } from './destination-set.js';
import type { Binding, ExchangeRouter } from './types.js';

/** Fanout: every bound destination gets every message; keys and headers are ignored. */
export class FanoutRouter implements ExchangeRouter {
  readonly #destinations = new DestinationSet();

  add(_id: string, binding: Binding): void {
    this.#destinations.add(binding.destination);
  }

  remove(_id: string, binding: Binding): void {
    this.#destinations.delete(binding.destination);
  }

  route(_routingKey: string, _headers: unknown, out: Set<string>): void {
    this.#destinations.addTo(out);
  }
}
