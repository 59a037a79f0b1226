/**
 * The two hash algorithms of LavinMQ's consistent-hash exchange, computed as LavinMQ 2.9.1
 * computes them, so a key reaches the same destination on mqlite as in production on LavinMQ.
 * Both hash with CRC-32 over UTF-8 and place each target by its name (a queue's or exchange's).
 */
import { crc32 } from 'node:zlib';

/** A consistent hash from keys to targets, where a target's weight is its share of the keys. */
export interface ConsistentHasher<T> {
  add(name: string, weight: number, target: T): void;
  remove(name: string, weight: number): void;
  get(key: string): T | undefined;
}

/** The algorithms LavinMQ's `x-algorithm` names; `ring` is its default. */
export type HashAlgorithm = 'ring' | 'jump';

/**
 * A hash ring: a target of weight w sits at the CRC-32 of `name.0` … `name.(w-1)`; a key goes to
 * the first point at or after its own CRC-32, wrapping to the earliest point still placed (the
 * point first inserted, as LavinMQ's insertion-ordered ring takes it, not the lowest).
 */
export class RingHasher<T> implements ConsistentHasher<T> {
  readonly #ring = new Map<number, T>();
  #sorted: number[] = [];

  add(name: string, weight: number, target: T): void {
    for (let t = 0; t < weight; t++) this.#ring.set(crc32(`${name}.${t}`), target);
    this.#sorted = [...this.#ring.keys()].sort((a, b) => a - b);
  }

  remove(name: string, weight: number): void {
    for (let t = 0; t < weight; t++) this.#ring.delete(crc32(`${name}.${t}`));
    this.#sorted = [...this.#ring.keys()].sort((a, b) => a - b);
  }

  get(key: string): T | undefined {
    if (this.#ring.size === 0) return undefined;
    const first = this.#ring.values().next().value as T;
    if (this.#ring.size === 1) return first;
    const hash = crc32(key);
    const sorted = this.#sorted;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid]! >= hash) hi = mid;
      else lo = mid + 1;
    }
    return lo === sorted.length ? first : this.#ring.get(sorted[lo]!);
  }
}

const MASK_64 = (1n << 64n) - 1n;
const JUMP_MULTIPLIER = 2862933555777941757n;

/**
 * Jump consistent hash (Lamping and Veach): each target fills `weight` buckets, in the order the
 * targets were added; a key's 64-bit hash is the CRC-32 of the key and of `key_salt`, side by side.
 */
export class JumpHasher<T> implements ConsistentHasher<T> {
  #entries: { name: string; weight: number; target: T }[] = [];
  #buckets: T[] = [];

  add(name: string, weight: number, target: T): void {
    this.#entries.push({ name, weight, target });
    this.#rebuild();
  }

  remove(name: string, weight: number): void {
    this.#entries = this.#entries.filter((e) => e.name !== name || e.weight !== weight);
    this.#rebuild();
  }

  get(key: string): T | undefined {
    if (this.#buckets.length <= 1) return this.#buckets[0];
    let hash = (BigInt(crc32(key)) << 32n) | BigInt(crc32(`${key}_salt`));
    let b = -1;
    let j = 0;
    while (j < this.#buckets.length) {
      b = j;
      hash = (hash * JUMP_MULTIPLIER + 1n) & MASK_64;
      j = Math.trunc(((b + 1) * 2 ** 31) / (Number(hash >> 33n) + 1));
    }
    return this.#buckets[b];
  }

  #rebuild(): void {
    this.#buckets = this.#entries.flatMap((e) => new Array<T>(e.weight).fill(e.target));
  }
}

/** A new hasher of the algorithm. */
export function newHasher<T>(algorithm: HashAlgorithm): ConsistentHasher<T> {
  return algorithm === 'jump' ? new JumpHasher<T>() : new RingHasher<T>();
}
