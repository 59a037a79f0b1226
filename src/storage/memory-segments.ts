/**
 * The segments of the memory adapter's logs, in two layouts behind one interface:
 * - {@link ObjectSegment} keeps the records as the objects appended;
 * - {@link PackedSegment} keeps them packed (for codecs with `packing`): payload bytes copied into
 *   buffers shared by many records, and per record a few numbers in typed arrays. Storing a record
 *   then leaves no object behind for the garbage collector to move out of the young generation,
 *   which was most of the cost of appending to a long log of objects.
 */
import { copyInto } from './bytes.js';
import type { RecordCodec, RecordPacking, SegmentInfo } from './types.js';

/** Slots a log's first segment starts with; later ones start at their predecessor's count. */
export const INITIAL_CAPACITY = 256;

/** What every layout stores per segment: the summary numbers and the arrival times. */
export abstract class Segment<T> {
  timestamps: Float64Array;
  count = 0;
  deletedCount = 0;
  /** byteLength sum of every record, deleted ones included. */
  bytes = 0;
  deletedBytes = 0;
  /** Set once the segment left the log; cursors standing on it then re-locate. */
  dropped = false;

  constructor(
    readonly id: number,
    readonly firstOffset: number,
    capacity: number,
  ) {
    this.timestamps = new Float64Array(capacity);
  }

  /** Writes record `i` (= `count`, with room for it: see {@link grow}). */
  abstract store(i: number, record: T): void;
  /** Record `i`, or undefined if deleted (or released). */
  abstract load(i: number): T | undefined;
  /** Index of the first live record at or after `i`, or `count`. */
  abstract firstLive(i: number): number;
  /** Marks record `i` deleted and returns it, or undefined if it already was. */
  abstract remove(i: number): T | undefined;
  abstract isDeleted(i: number): boolean;
  /** Makes room for `count + 1` records. */
  abstract grow(): void;
  /** Gives back unused slots once the segment is no longer written. */
  abstract trim(): void;
  /** Lets go of every record (the segment was reclaimed while cursors may still hold it). */
  abstract release(): void;

  get capacity(): number {
    return this.timestamps.length;
  }

  /** Capacity after a growth step. */
  protected grownCapacity(): number {
    return Math.max(INITIAL_CAPACITY, this.count * 2);
  }

  /** Whether enough slots are unused to be worth giving back. */
  protected worthTrimming(): boolean {
    return this.timestamps.length - this.count > this.count >> 2;
  }

  info(): SegmentInfo {
    const n = this.count;
    return Object.freeze({
      id: this.id,
      firstOffset: this.firstOffset,
      lastOffset: this.firstOffset + n - 1,
      count: n,
      deletedCount: this.deletedCount,
      bytes: this.bytes,
      firstTimestamp: n > 0 ? this.timestamps[0]! : Number.NaN,
      lastTimestamp: n > 0 ? this.timestamps[n - 1]! : Number.NaN,
    });
  }
}

/** Takes the place of a deleted record, so its memory is released at once. */
const DELETED: unique symbol = Symbol('deleted');
/** V8 keeps `new Array(n)` in fast elements only below about 100k slots. */
const MAX_PREALLOCATED = 65_536;

/** Records kept as the objects appended. */
export class ObjectSegment<T> extends Segment<T> {
  records: (T | typeof DELETED)[];

  constructor(id: number, firstOffset: number, capacity: number) {
    super(id, firstOffset, capacity);
    // Holey is fine: a slot is read only after it was written.
    this.records = new Array(Math.min(capacity, MAX_PREALLOCATED));
  }

  store(i: number, record: T): void {
    this.records[i] = record;
  }

  load(i: number): T | undefined {
    const r = this.records[i];
    return r === DELETED ? undefined : r;
  }

  firstLive(i: number): number {
    const records = this.records;
    const n = this.count;
    while (i < n && records[i] === DELETED) i++;
    return i;
  }

  remove(i: number): T | undefined {
    const r = this.records[i];
    if (r === DELETED || r === undefined) return undefined;
    this.records[i] = DELETED;
    return r;
  }

  isDeleted(i: number): boolean {
    return this.records[i] === DELETED;
  }

  grow(): void {
    // The records array grows by itself.
    this.timestamps = grownCopy(this.timestamps, this.grownCapacity());
  }

  trim(): void {
    if (!this.worthTrimming()) return;
    this.records.length = this.count;
    this.timestamps = this.timestamps.slice(0, this.count);
  }

  release(): void {
    this.records = [];
    this.timestamps = new Float64Array(0);
  }
}

/** Envelope index of a deleted record. */
const DELETED_ENVELOPE = 0xffff_ffff;
/** Size of a log's first payload buffer; each next one doubles, up to {@link MAX_BUFFER}. */
const FIRST_BUFFER = 4096;
const MAX_BUFFER = 1024 * 1024;
/** Payloads larger than this get a buffer of their own rather than a quarter of a shared one. */
const MAX_SHARED_PAYLOAD = MAX_BUFFER / 4;

/**
 * Where a packed log copies payloads: the buffer being filled, shared by consecutive records
 * across segment boundaries. A buffer lives while a segment that refers to it does.
 */
export class PayloadWriter {
  bytes = new Uint8Array(0);
  used = 0;

  /** Starts a new buffer with room for at least `length` bytes. */
  next(length: number): void {
    let size = Math.min(Math.max(FIRST_BUFFER, this.bytes.length * 2), MAX_BUFFER);
    while (size < length) size *= 2;
    this.bytes = new Uint8Array(size);
    this.used = 0;
  }
}

/**
 * Records kept packed: record `i` is `packing.unpack(envelopes[envelopeOf[i]],
 * buffers[bufferOf[i]], byteOffsets[i], byteLengths[i])`. Envelopes are listed once per run of
 * records that match the previous one's. A deleted record keeps its payload bytes until the
 * segment goes, as they share buffers with others.
 */
export class PackedSegment<T> extends Segment<T> {
  readonly #packing: RecordPacking<T>;
  readonly #writer: PayloadWriter;
  #buffers: ArrayBuffer[] = [];
  /** The writer's buffer as this segment last saw it, and its index in `#buffers`. */
  #shared: Uint8Array | undefined;
  #sharedIndex = -1;
  #envelopes: T[] = [];
  #bufferOf: Uint32Array;
  #byteOffsets: Uint32Array;
  #byteLengths: Uint32Array;
  #envelopeOf: Uint32Array;

  constructor(
    id: number,
    firstOffset: number,
    capacity: number,
    packing: RecordPacking<T>,
    writer: PayloadWriter,
  ) {
    super(id, firstOffset, capacity);
    this.#packing = packing;
    this.#writer = writer;
    this.#bufferOf = new Uint32Array(capacity);
    this.#byteOffsets = new Uint32Array(capacity);
    this.#byteLengths = new Uint32Array(capacity);
    this.#envelopeOf = new Uint32Array(capacity);
  }

  store(i: number, record: T): void {
    const packing = this.#packing;
    const payload = packing.payload(record);
    const length = payload.length;
    if (length > MAX_SHARED_PAYLOAD) {
      this.#bufferOf[i] = this.#buffers.push(payload.slice().buffer) - 1;
      this.#byteOffsets[i] = 0;
    } else {
      const writer = this.#writer;
      if (writer.used + length > writer.bytes.length) writer.next(length);
      const bytes = writer.bytes;
      if (bytes !== this.#shared) {
        this.#shared = bytes;
        this.#sharedIndex = this.#buffers.push(bytes.buffer) - 1;
      }
      copyInto(bytes, payload, writer.used);
      this.#bufferOf[i] = this.#sharedIndex;
      this.#byteOffsets[i] = writer.used;
      writer.used += length;
    }
    this.#byteLengths[i] = length;
    const envelopes = this.#envelopes;
    const last = envelopes.length - 1;
    if (last >= 0 && packing.matches(record, envelopes[last]!)) this.#envelopeOf[i] = last;
    else this.#envelopeOf[i] = envelopes.push(packing.envelope(record)) - 1;
  }

  load(i: number): T | undefined {
    const e = this.#envelopeOf[i];
    if (e === DELETED_ENVELOPE || e === undefined || i >= this.count) return undefined;
    return this.#packing.unpack(
      this.#envelopes[e]!,
      this.#buffers[this.#bufferOf[i]!]!,
      this.#byteOffsets[i]!,
      this.#byteLengths[i]!,
    );
  }

  firstLive(i: number): number {
    const envelopeOf = this.#envelopeOf;
    const n = this.count;
    while (i < n && envelopeOf[i] === DELETED_ENVELOPE) i++;
    return i;
  }

  remove(i: number): T | undefined {
    const record = this.load(i);
    if (record !== undefined) this.#envelopeOf[i] = DELETED_ENVELOPE;
    return record;
  }

  isDeleted(i: number): boolean {
    return i < this.count && this.#envelopeOf[i] === DELETED_ENVELOPE;
  }

  grow(): void {
    const capacity = this.grownCapacity();
    this.timestamps = grownCopy(this.timestamps, capacity);
    this.#bufferOf = grownCopy(this.#bufferOf, capacity);
    this.#byteOffsets = grownCopy(this.#byteOffsets, capacity);
    this.#byteLengths = grownCopy(this.#byteLengths, capacity);
    this.#envelopeOf = grownCopy(this.#envelopeOf, capacity);
  }

  trim(): void {
    this.#shared = undefined;
    if (!this.worthTrimming()) return;
    const n = this.count;
    this.timestamps = this.timestamps.slice(0, n);
    this.#bufferOf = this.#bufferOf.slice(0, n);
    this.#byteOffsets = this.#byteOffsets.slice(0, n);
    this.#byteLengths = this.#byteLengths.slice(0, n);
    this.#envelopeOf = this.#envelopeOf.slice(0, n);
  }

  release(): void {
    this.#buffers = [];
    this.#envelopes = [];
    this.#shared = undefined;
    this.timestamps = new Float64Array(0);
    this.#bufferOf = new Uint32Array(0);
    this.#byteOffsets = new Uint32Array(0);
    this.#byteLengths = new Uint32Array(0);
    this.#envelopeOf = new Uint32Array(0);
  }
}

function grownCopy<A extends Float64Array | Uint32Array>(array: A, capacity: number): A {
  const grown = new (array.constructor as new (n: number) => A)(capacity);
  grown.set(array);
  return grown;
}

/** A new empty segment in the layout `codec` asks for. */
export function newSegment<T>(
  codec: RecordCodec<T>,
  writer: PayloadWriter,
  id: number,
  firstOffset: number,
  capacity: number,
): Segment<T> {
  const packing = codec.packing;
  return packing === undefined
    ? new ObjectSegment<T>(id, firstOffset, capacity)
    : new PackedSegment<T>(id, firstOffset, capacity, packing, writer);
}
