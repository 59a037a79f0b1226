/**
 * A spatial index of geo-bounded consumers, so a publish finds the consumers whose regions may
 * hold the message's point without asking every consumer. Only filters with a `geoRegion` can be
 * indexed; the caller matches the others as usual.
 */
import RBush from 'rbush';
import type { CompiledStreamFilter } from './compile.js';
import { headerLat, headerLon, type RadiusCheck, radiusCheck, withinRadius } from './geo.js';
import type { Headers } from './types.js';

interface Entry<Id> {
  readonly id: Id;
  readonly filter: CompiledStreamFilter;
  readonly items: readonly Item<Id>[];
  /** Whether a point inside the item's box (and circle) still needs `filter.matches`. */
  readonly needsCheck: boolean;
  /** Search number that last reported this entry: reports each entry once per search. */
  seen: number;
}

/** How an item decides a point inside its box, without touching the (cold) filter. */
enum Shape {
  /** Ask the filter. */
  Filter = 0,
  /** The box is the filter's exact region. */
  Box = 1,
  /** Within the circle of the item's radius constants. */
  Circle = 2,
}

/**
 * An rbush item: x is longitude, y latitude. A single-circle filter's constants live in the item
 * itself, so the search tests the circle on memory it has just read.
 */
interface Item<Id> extends RadiusCheck {
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
  readonly entry: Entry<Id>;
  readonly shape: Shape;
}

/** rbush's node shape, as its documented `toJSON()` exposes it. */
interface TreeNode<Id> {
  readonly children: readonly (TreeNode<Id> | Item<Id>)[];
  readonly leaf: boolean;
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
}

const NO_CIRCLE: RadiusCheck = { lat0: 0, lon0: 0, cosLat0: 0, sure: 0, out: 0, radiusKm: 0 };

/** Pushes the entries whose boxes hold the point; with `exact`, also applies circle tests. */
function collect<Id>(
  node: TreeNode<Id>,
  lat: number,
  lon: number,
  exact: boolean,
  epoch: number,
  out: Entry<Id>[],
): void {
  const children = node.children;
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!;
    if (lon < c.minX || lon > c.maxX || lat < c.minY || lat > c.maxY) continue;
    if (!node.leaf) {
      collect(c as TreeNode<Id>, lat, lon, exact, epoch, out);
      continue;
    }
    const item = c as Item<Id>;
    const entry = item.entry;
    if (entry.seen === epoch) continue;
    if (exact && item.shape === Shape.Circle && !withinRadius(item, lat, lon)) continue;
    entry.seen = epoch;
    out.push(entry);
  }
}

/**
 * Consumers keyed by `Id`, indexed by the bounding boxes of their filters' geo regions.
 *
 * A search collects its matches before it visits any, so a visitor may insert or remove entries
 * (a delivery that cancels a consumer, say): the change applies from the next search on.
 */
export class GeoIndex<Id> {
  readonly #tree = new RBush<Item<Id>>(16);
  readonly #entries = new Map<Id, Entry<Id>>();
  readonly #buffer: Entry<Id>[] = [];
  /** Items inserted one by one since the tree was last bulk-loaded. */
  #inserted = 0;
  #epoch = 0;
  #searching = false;

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
   * indexes nothing) when the filter has no `geoRegion`: such a consumer must be asked about
   * every message.
   */
  insert(id: Id, filter: CompiledStreamFilter): boolean {
    const region = filter.geoRegion;
    if (!region) return false;
    this.remove(id);
    const exact = filter.exactGeo;
    const shape =
      exact?.kind === 'radius' ? Shape.Circle : exact?.kind === 'bbox' ? Shape.Box : Shape.Filter;
    const circle = exact?.kind === 'radius' ? radiusCheck(exact) : NO_CIRCLE;
    const items: Item<Id>[] = [];
    const entry: Entry<Id> = { id, filter, items, needsCheck: shape === Shape.Filter, seen: -1 };
    for (const b of region) {
      items.push({
        minX: b.minLon,
        minY: b.minLat,
        maxX: b.maxLon,
        maxY: b.maxLat,
        entry,
        shape,
        ...circle,
      });
    }
    for (const item of items) this.#tree.insert(item);
    this.#inserted += items.length;
    this.#entries.set(id, entry);
    return true;
  }

  /** Removes a consumer; returns whether it was indexed. */
  remove(id: Id): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    for (const item of entry.items) this.#tree.remove(item);
    this.#entries.delete(id);
    return true;
  }

  /** Removes every consumer. */
  clear(): void {
    this.#tree.clear();
    this.#entries.clear();
    this.#inserted = 0;
  }

  /**
   * Visits, once each, the consumers whose region boxes contain the point: a superset of those
   * whose filter matches a message there. Visits nothing for a `NaN` coordinate.
   */
  search(lat: number, lon: number, visit: (id: Id, filter: CompiledStreamFilter) => void): void {
    this.#run(lat, lon, false, undefined, visit);
  }

  /** Visits the indexed consumers whose filter matches a message with these headers. */
  forEachMatch(headers: Headers, visit: (id: Id) => void): void {
    this.#run(headerLat(headers), headerLon(headers), true, headers, visit);
  }

  /** With `headers`, visits only the entries whose filter matches them. */
  #run(
    lat: number,
    lon: number,
    exact: boolean,
    headers: Headers | undefined,
    visit: (id: Id, filter: CompiledStreamFilter) => void,
  ): void {
    if (Number.isNaN(lat) || Number.isNaN(lon) || this.#entries.size === 0) return;
    // A visitor may search again: only the outermost search uses the shared buffer.
    const nested = this.#searching;
    if (!nested) this.#rebalance();
    const found = nested ? [] : this.#buffer;
    const epoch = ++this.#epoch;
    collect(this.#tree.toJSON() as TreeNode<Id>, lat, lon, exact, epoch, found);
    this.#searching = true;
    try {
      for (let i = 0; i < found.length; i++) {
        const entry = found[i]!;
        if (headers !== undefined && entry.needsCheck && !entry.filter.matches(headers)) continue;
        visit(entry.id, entry.filter);
      }
    } finally {
      this.#searching = nested;
      if (!nested) found.length = 0;
    }
  }

  /**
   * Bulk-loads the tree again once a quarter of its items came one by one: a tree grown by
   * inserts has overlapping nodes that a search must all descend. Amortized, O(log n) an insert.
   */
  #rebalance(): void {
    const inserted = this.#inserted;
    if (inserted < 64 || inserted * 4 < this.#entries.size) return;
    const items: Item<Id>[] = [];
    for (const entry of this.#entries.values()) for (const item of entry.items) items.push(item);
    this.#tree.clear();
    this.#tree.load(items);
    this.#inserted = 0;
  }
}
