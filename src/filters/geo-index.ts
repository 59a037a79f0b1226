/**
 * A spatial index of geo-bounded consumers, so a publish finds the consumers whose regions may
 * hold the message's point without asking every consumer. Only filters with a `geoRegion` can be
 * indexed; the caller matches the others as usual.
 */
import RBush from 'rbush';
import type { CompiledStreamFilter } from './compile.js';
import {
  headerLat,
  headerLon,
  type RadiusCheck,
  radiusCheck,
  termToKm,
  withinRadius,
} from './geo.js';
import type { GeoBox, Headers } from './types.js';

/** How an item decides a point inside its box, without touching the (cold) filter. */
enum Shape {
  /** Ask the filter. */
  Filter = 0,
  /** The box is the filter's exact region. */
  Box = 1,
  /** Within the filter's circle. */
  Circle = 2,
}

interface Entry<Id> {
  readonly id: Id;
  readonly filter: CompiledStreamFilter;
  readonly boxes: readonly GeoBox[];
  readonly shape: Shape;
  readonly circle: RadiusCheck;
  /** Removed (or replaced): skipped until the next build drops it. */
  dead: boolean;
  /** Search number that last reported this entry: reports each entry once per search. */
  seen: number;
  /** Its items in the flat tree (none while pending). */
  items: number[];
}

/** What rbush bulk-loads: x is longitude, y latitude. */
interface Item<Id> {
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
  readonly entry: Entry<Id>;
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
const RAD = Math.PI / 180;
// rbush node size: wide enough nodes keep the tree shallow, narrow enough to test few boxes.
const NODE_SIZE = 12;
// Per item in `#circles`: lat0, lon0, cos(lat0), sure, out, radiusKm (see `RadiusCheck`).
const CIRCLE_STRIDE = 6;
// Per item in `#itemFlags`: its entry's shape in the low bits, and these.
const SHAPE_BITS = 3;
/** Its entry was removed. */
const DEAD = 4;
/** Its entry has other items: only these need the entry's `seen` to be reported once. */
const SHARED = 8;
const EMPTY_F64 = new Float64Array(0);
const EMPTY_I32 = new Int32Array(0);

/**
 * Consumers keyed by `Id`, indexed by the bounding boxes of their filters' geo regions.
 *
 * rbush bulk-loads the boxes; the loaded tree is then laid out flat in typed arrays (boxes, child
 * ranges, circle constants), so a search tests contiguous numbers instead of chasing objects.
 * Consumers added since the last build are tested one by one and removed ones skipped, until
 * enough changed to build again: amortized, a change costs O(log n) per indexed item.
 *
 * A search collects its matches before it visits any, so a visitor may insert or remove entries
 * (a delivery that cancels a consumer, say): the change applies from the next search on.
 */
export class GeoIndex<Id> {
  readonly #tree = new RBush<Item<Id>>(NODE_SIZE);
  readonly #entries = new Map<Id, Entry<Id>>();
  /** The outermost search's matches: items of the flat tree, and pending entries. */
  readonly #foundItems: number[] = [];
  readonly #foundPending: Entry<Id>[] = [];
  /** Entries added since the last build: not in the flat tree yet. */
  #pending: Entry<Id>[] = [];
  /** Dead entries still in the flat tree. */
  #dead = 0;
  #epoch = 0;
  #searching = false;

  // The flat tree. Node i: box at 4i (minLon, minLat, maxLon, maxLat), children [start, start +
  // count) are nodes, or items when `leaf`. Item j: box at 4j, flags, circle, id, filter, entry.
  // A search reads an item's entry object (a cache miss each) only when that entry has several.
  #nodeBoxes = EMPTY_F64;
  #nodeStart = EMPTY_I32;
  #nodeCount = EMPTY_I32;
  #nodeLeaf = new Uint8Array(0);
  #itemBoxes = EMPTY_F64;
  #itemFlags = new Uint8Array(0);
  #circles = EMPTY_F64;
  #itemIds: Id[] = [];
  #itemFilters: CompiledStreamFilter[] = [];
  #itemEntries: Entry<Id>[] = [];
  #stack = EMPTY_I32;

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
    const boxes = filter.geoRegion;
    if (!boxes) return false;
    this.remove(id);
    const exact = filter.exactGeo;
    const entry: Entry<Id> = {
      id,
      filter,
      boxes,
      shape:
        exact?.kind === 'radius' ? Shape.Circle : exact?.kind === 'bbox' ? Shape.Box : Shape.Filter,
      circle: exact?.kind === 'radius' ? radiusCheck(exact) : NO_CIRCLE,
      dead: false,
      seen: -1,
      items: [],
    };
    this.#pending.push(entry);
    this.#entries.set(id, entry);
    return true;
  }

  /** Removes a consumer; returns whether it was indexed. */
  remove(id: Id): boolean {
    const entry = this.#entries.get(id);
    if (!entry) return false;
    entry.dead = true;
    const flags = this.#itemFlags;
    for (const item of entry.items) flags[item]! |= DEAD;
    this.#dead++;
    this.#entries.delete(id);
    return true;
  }

  /** Removes every consumer. */
  clear(): void {
    for (const entry of this.#entries.values()) entry.dead = true;
    this.#entries.clear();
    this.#pending = [];
    this.#build();
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
    // A visitor may search again: only the outermost search uses the shared buffer (and may
    // rebuild the arrays the searches read).
    const nested = this.#searching;
    if (!nested) this.#refresh();
    const items = nested ? [] : this.#foundItems;
    const pending = nested ? [] : this.#foundPending;
    // A visitor's change may build the flat tree again: `items` index these arrays.
    const flags = this.#itemFlags;
    const ids = this.#itemIds;
    const filters = this.#itemFilters;
    const epoch = ++this.#epoch;
    this.#collect(lat, lon, exact, epoch, items);
    this.#collectPending(lat, lon, exact, epoch, pending);
    this.#searching = true;
    try {
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!;
        const filter = filters[item]!;
        if (
          headers !== undefined &&
          (flags[item]! & SHAPE_BITS) === Shape.Filter &&
          !filter.matches(headers)
        ) {
          continue;
        }
        visit(ids[item]!, filter);
      }
      for (let i = 0; i < pending.length; i++) {
        const entry = pending[i]!;
        if (
          headers !== undefined &&
          entry.shape === Shape.Filter &&
          !entry.filter.matches(headers)
        ) {
          continue;
        }
        visit(entry.id, entry.filter);
      }
    } finally {
      this.#searching = nested;
      if (!nested) {
        items.length = 0;
        pending.length = 0;
      }
    }
  }

  /** Pushes the live items whose boxes hold the point; with `exact`, tests circles too. */
  #collect(lat: number, lon: number, exact: boolean, epoch: number, out: number[]): void {
    const nodeBoxes = this.#nodeBoxes;
    if (
      nodeBoxes.length === 0 ||
      lon < nodeBoxes[0]! ||
      lat < nodeBoxes[1]! ||
      lon > nodeBoxes[2]! ||
      lat > nodeBoxes[3]!
    ) {
      return;
    }
    const nodeStart = this.#nodeStart;
    const nodeCount = this.#nodeCount;
    const nodeLeaf = this.#nodeLeaf;
    const itemBoxes = this.#itemBoxes;
    const flags = this.#itemFlags;
    const circles = this.#circles;
    const entries = this.#itemEntries;
    const stack = this.#stack;
    // The point's share of every haversine term, computed once.
    const cosLat = Math.cos(lat * RAD);
    let top = 0;
    stack[top++] = 0;
    while (top > 0) {
      const node = stack[--top]!;
      const start = nodeStart[node]!;
      const end = start + nodeCount[node]!;
      if (nodeLeaf[node] === 0) {
        for (let c = start; c < end; c++) {
          const b = c * 4;
          if (
            lon < nodeBoxes[b]! ||
            lat < nodeBoxes[b + 1]! ||
            lon > nodeBoxes[b + 2]! ||
            lat > nodeBoxes[b + 3]!
          ) {
            continue;
          }
          stack[top++] = c;
        }
        continue;
      }
      for (let c = start; c < end; c++) {
        const b = c * 4;
        if (
          lon < itemBoxes[b]! ||
          lat < itemBoxes[b + 1]! ||
          lon > itemBoxes[b + 2]! ||
          lat > itemBoxes[b + 3]!
        ) {
          continue;
        }
        const itemFlags = flags[c]!;
        if (exact && (itemFlags & SHAPE_BITS) === Shape.Circle) {
          // `withinRadius` on the flat constants, the point's cosine hoisted.
          const k = c * CIRCLE_STRIDE;
          const sLat = Math.sin((lat - circles[k]!) * RAD * 0.5);
          const sLon = Math.sin((lon - circles[k + 1]!) * RAD * 0.5);
          const a = sLat * sLat + circles[k + 2]! * cosLat * sLon * sLon;
          if (a > circles[k + 3]! && !(a <= circles[k + 4]! && termToKm(a) <= circles[k + 5]!)) {
            continue;
          }
        }
        if ((itemFlags & DEAD) !== 0) continue;
        if ((itemFlags & SHARED) !== 0) {
          const entry = entries[c]!;
          if (entry.seen === epoch) continue;
          entry.seen = epoch;
        }
        out.push(c);
      }
    }
  }

  /** Pushes the entries added since the last build that hold the point. */
  #collectPending(lat: number, lon: number, exact: boolean, epoch: number, out: Entry<Id>[]) {
    const pending = this.#pending;
    for (let i = 0; i < pending.length; i++) {
      const entry = pending[i]!;
      if (entry.dead || entry.seen === epoch) continue;
      let inside = false;
      for (const box of entry.boxes) {
        if (lat >= box.minLat && lat <= box.maxLat && lon >= box.minLon && lon <= box.maxLon) {
          inside = true;
          break;
        }
      }
      if (!inside) continue;
      if (exact && entry.shape === Shape.Circle && !withinRadius(entry.circle, lat, lon)) continue;
      entry.seen = epoch;
      out.push(entry);
    }
  }

  /**
   * Builds again once the changes since the last build cost more to step over than a build:
   * more pending entries than about √n (each search tests them all), or a quarter dead.
   */
  #refresh(): void {
    const live = this.#entries.size;
    const pending = this.#pending.length;
    if (pending === 0 && this.#dead * 4 <= live) return;
    if (pending <= Math.max(32, Math.sqrt(live)) && this.#dead * 4 <= live + 64) return;
    this.#build();
  }

  /** Bulk-loads every live entry's boxes and lays the tree out flat. */
  #build(): void {
    const items: Item<Id>[] = [];
    for (const entry of this.#entries.values()) {
      entry.items = [];
      for (const b of entry.boxes) {
        items.push({ minX: b.minLon, minY: b.minLat, maxX: b.maxLon, maxY: b.maxLat, entry });
      }
    }
    this.#pending = [];
    this.#dead = 0;
    const tree = this.#tree;
    tree.clear();
    tree.load(items);
    this.#layOut(tree.toJSON() as TreeNode<Id>, items.length);
    tree.clear();
  }

  /** Copies a loaded tree breadth-first into the typed arrays: siblings end up contiguous. */
  #layOut(root: TreeNode<Id>, itemCount: number): void {
    const nodes: TreeNode<Id>[] = [];
    if (itemCount > 0) nodes.push(root);
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i]!;
      if (!node.leaf) for (const child of node.children) nodes.push(child as TreeNode<Id>);
    }
    const nodeBoxes = new Float64Array(nodes.length * 4);
    const nodeStart = new Int32Array(nodes.length);
    const nodeCount = new Int32Array(nodes.length);
    const nodeLeaf = new Uint8Array(nodes.length);
    const itemBoxes = new Float64Array(itemCount * 4);
    const flags = new Uint8Array(itemCount);
    const circles = new Float64Array(itemCount * CIRCLE_STRIDE);
    const ids: Id[] = [];
    const filters: CompiledStreamFilter[] = [];
    const entries: Entry<Id>[] = [];
    let nextNode = 1;
    let depth = 0;
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i]!;
      nodeBoxes.set([node.minX, node.minY, node.maxX, node.maxY], i * 4);
      nodeCount[i] = node.children.length;
      if (!node.leaf) {
        nodeStart[i] = nextNode;
        nextNode += node.children.length;
        continue;
      }
      nodeLeaf[i] = 1;
      nodeStart[i] = entries.length;
      for (const child of node.children) {
        const item = child as Item<Id>;
        const j = entries.length;
        const { entry } = item;
        const c = entry.circle;
        itemBoxes.set([item.minX, item.minY, item.maxX, item.maxY], j * 4);
        flags[j] = entry.shape | (entry.boxes.length > 1 ? SHARED : 0);
        circles.set([c.lat0, c.lon0, c.cosLat0, c.sure, c.out, c.radiusKm], j * CIRCLE_STRIDE);
        ids.push(entry.id);
        filters.push(entry.filter);
        entries.push(entry);
        entry.items.push(j);
      }
    }
    for (let n: TreeNode<Id> | undefined = root; n && !n.leaf; n = n.children[0] as TreeNode<Id>) {
      depth++;
    }
    this.#nodeBoxes = nodeBoxes;
    this.#nodeStart = nodeStart;
    this.#nodeCount = nodeCount;
    this.#nodeLeaf = nodeLeaf;
    this.#itemBoxes = itemBoxes;
    this.#itemFlags = flags;
    this.#circles = circles;
    this.#itemIds = ids;
    this.#itemFilters = filters;
    this.#itemEntries = entries;
    // A search holds at most every child of each level on its way down.
    this.#stack = new Int32Array((depth + 1) * NODE_SIZE + 1);
  }
}
