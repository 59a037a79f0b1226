/**
 * Per-segment summaries of what a stream segment holds, as filters see it: the filter values (a
 * set, then a Bloom filter once there are many), whether a message had none, and the box of the
 * message coordinates. A replaying reader asks `mayMatch` and skips segments that cannot hold a
 * match. Summaries are plain JSON so the stream can persist them beside its segment index.
 */
import type { CompiledStreamFilter } from './compile.js';
import { filterValues } from './filter-values.js';
import { boxesIntersect, headerLat, headerLon } from './geo.js';
import { FILTER_VALUE_HEADER, type GeoBox, type Headers } from './types.js';

/** A JSON-serializable summary of the messages of one segment. */
export interface SegmentSummary {
  readonly version: 1;
  /** Messages summarized. */
  readonly count: number;
  /** Whether at least one message had no `x-stream-filter-value` header. */
  readonly unfiltered: boolean;
  /** The distinct filter values, or `null` once there were too many and `bloom` holds them. */
  readonly values: readonly string[] | null;
  /** A Bloom filter of the filter values (bits in base64), once `values` overflowed. */
  readonly bloom: { readonly bits: string; readonly hashes: number } | null;
  /** The box of every valid message coordinate, or `null` when no message had one. */
  readonly geo: GeoBox | null;
}

/** Sizing of a summary. */
export interface SegmentSummaryOptions {
  /** Distinct values kept exactly before switching to a Bloom filter (default 128). */
  maxExactValues?: number;
  /** Bloom filter size in bits, a multiple of 8 (default 8192: ~2% false positives at 1000 values). */
  bloomBits?: number;
  /** Bloom filter hash functions (default 4). */
  bloomHashes?: number;
}

// Two 32-bit FNV-1a variants for double hashing: index_i = h1 + i * h2.
function hashPair(value: string): [number, number] {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ value.length;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  h2 ^= h2 >>> 15;
  return [h1 >>> 0, (h2 | 1) >>> 0];
}

function bloomAdd(bits: Uint8Array, hashes: number, value: string): void {
  const [h1, h2] = hashPair(value);
  const m = bits.length * 8;
  for (let i = 0; i < hashes; i++) {
    const bit = (h1 + i * h2) % m;
    bits[bit >>> 3]! |= 1 << (bit & 7);
  }
}

function bloomHas(bits: Uint8Array, hashes: number, value: string): boolean {
  const [h1, h2] = hashPair(value);
  const m = bits.length * 8;
  for (let i = 0; i < hashes; i++) {
    const bit = (h1 + i * h2) % m;
    if ((bits[bit >>> 3]! & (1 << (bit & 7))) === 0) return false;
  }
  return true;
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer`);
  return value;
}

/** Accumulates a `SegmentSummary` as messages are appended to a segment. */
export class SegmentSummaryBuilder {
  readonly #maxExact: number;
  readonly #bloomBytes: number;
  #hashes: number;
  #count = 0;
  #unfiltered = false;
  #values: Set<string> | null = new Set();
  #bits: Uint8Array | null = null;
  #minLat = Number.POSITIVE_INFINITY;
  #maxLat = Number.NEGATIVE_INFINITY;
  #minLon = Number.POSITIVE_INFINITY;
  #maxLon = Number.NEGATIVE_INFINITY;

  /** Starts an empty summary, or continues `from` (a segment reopened for appending). */
  constructor(options: SegmentSummaryOptions = {}, from?: SegmentSummary) {
    this.#maxExact = positiveInt('maxExactValues', options.maxExactValues, 128);
    const bits = positiveInt('bloomBits', options.bloomBits, 8192);
    if (bits % 8 !== 0) throw new RangeError('bloomBits must be a multiple of 8');
    this.#bloomBytes = bits / 8;
    this.#hashes = positiveInt('bloomHashes', options.bloomHashes, 4);
    if (from) this.#resume(from);
  }

  #resume(from: SegmentSummary): void {
    this.#count = from.count;
    this.#unfiltered = from.unfiltered;
    if (from.bloom) {
      this.#values = null;
      this.#bits = new Uint8Array(Buffer.from(from.bloom.bits, 'base64'));
      this.#hashes = from.bloom.hashes;
    } else {
      this.#values = new Set(from.values);
    }
    if (from.geo) {
      ({
        minLat: this.#minLat,
        maxLat: this.#maxLat,
        minLon: this.#minLon,
        maxLon: this.#maxLon,
      } = from.geo);
    }
  }

  /** Messages summarized so far. */
  get count(): number {
    return this.#count;
  }

  /**
   * Adds one message, given its headers. With `valuesSeen`, an earlier message of this summary
   * carried the same `x-stream-filter-value` header: its values are in already.
   */
  add(headers: Headers | undefined, valuesSeen = false): void {
    this.#count++;
    const raw = headers?.[FILTER_VALUE_HEADER];
    if (raw === undefined || raw === null) this.#unfiltered = true;
    else if (!valuesSeen) for (const value of filterValues(raw)) this.#addValue(value);
    if (!headers) return;
    const lat = headerLat(headers);
    const lon = headerLon(headers);
    if (Number.isNaN(lat) || Number.isNaN(lon)) return;
    if (lat < this.#minLat) this.#minLat = lat;
    if (lat > this.#maxLat) this.#maxLat = lat;
    if (lon < this.#minLon) this.#minLon = lon;
    if (lon > this.#maxLon) this.#maxLon = lon;
  }

  #addValue(value: string): void {
    const values = this.#values;
    if (values) {
      if (values.has(value) || values.size < this.#maxExact) {
        values.add(value);
        return;
      }
      const bits = new Uint8Array(this.#bloomBytes);
      for (const v of values) bloomAdd(bits, this.#hashes, v);
      this.#bits = bits;
      this.#values = null;
    }
    bloomAdd(this.#bits!, this.#hashes, value);
  }

  /** A snapshot of the summary, ready for `JSON.stringify`. */
  toJSON(): SegmentSummary {
    return {
      version: 1,
      count: this.#count,
      unfiltered: this.#unfiltered,
      values: this.#values ? [...this.#values] : null,
      bloom: this.#bits
        ? { bits: Buffer.from(this.#bits).toString('base64'), hashes: this.#hashes }
        : null,
      geo:
        this.#minLat <= this.#maxLat
          ? {
              minLat: this.#minLat,
              maxLat: this.#maxLat,
              minLon: this.#minLon,
              maxLon: this.#maxLon,
            }
          : null,
    };
  }
}

interface DecodedValues {
  readonly set: ReadonlySet<string> | null;
  readonly bits: Uint8Array | null;
}

// Summaries are read far more often than written: decode each one once.
const decoded = new WeakMap<SegmentSummary, DecodedValues>();

function decode(summary: SegmentSummary): DecodedValues {
  let d = decoded.get(summary);
  if (!d) {
    d = summary.bloom
      ? { set: null, bits: new Uint8Array(Buffer.from(summary.bloom.bits, 'base64')) }
      : { set: new Set(summary.values), bits: null };
    decoded.set(summary, d);
  }
  return d;
}

function mayHoldValue(summary: SegmentSummary, value: string): boolean {
  const { set, bits } = decode(summary);
  return set ? set.has(value) : bloomHas(bits!, summary.bloom!.hashes, value);
}

/**
 * Whether a segment with this summary may hold a message the filter matches. `false` is a
 * guarantee (the reader may skip the segment); `true` only means "read it". Key-value filters
 * are not summarized and always may match.
 */
export function mayMatch(filter: CompiledStreamFilter, summary: SegmentSummary): boolean {
  if (summary.count === 0) return false;
  if (filter.matchUnfiltered && summary.unfiltered) return true;
  const nodes = filter.spec.filters;
  const geo = summary.geo;
  const nodeMay = (i: number): boolean => {
    const node = nodes[i]!;
    if (node.kind === 'value') return mayHoldValue(summary, node.value);
    if (node.kind === 'header') return true;
    return geo !== null && filter.nodeBoxes[i]!.some((b) => boxesIntersect(b, geo));
  };
  // 'all' needs one message passing every filter: each must be possible on its own.
  if (filter.matchType === 'all') {
    for (let i = 0; i < nodes.length; i++) if (!nodeMay(i)) return false;
    return true;
  }
  for (let i = 0; i < nodes.length; i++) if (nodeMay(i)) return true;
  return false;
}
