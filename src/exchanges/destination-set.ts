/**
 * A multiset of destination names: several bindings may lead to the same destination (different
 * keys or arguments), and a destination stays routable until its last binding goes.
 */
export class DestinationSet {
  readonly #counts = new Map<string, number>();

  /** Distinct destinations held. */
  get size(): number {
    return this.#counts.size;
  }

  add(destination: string): void {
    this.#counts.set(destination, (this.#counts.get(destination) ?? 0) + 1);
  }

  /** Removes one occurrence; unknown names are ignored. */
  delete(destination: string): void {
    const n = this.#counts.get(destination);
    if (n === undefined) return;
    if (n <= 1) this.#counts.delete(destination);
    else this.#counts.set(destination, n - 1);
  }

  /** Adds every distinct destination to `out`. */
  addTo(out: Set<string>): void {
    for (const d of this.#counts.keys()) out.add(d);
  }
}
