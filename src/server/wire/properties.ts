/**
 * The content header of class basic: body size and the fourteen basic properties, each present
 * when its flag bit is set (bit 15 first).
 */
import type { FieldTable, MessageProperties } from '../../message/types.js';
import { Reader, WireSyntaxError, type Writer } from './bytes.js';
import { readTable, writeTable } from './field-table.js';

type Kind = 'shortstr' | 'table' | 'octet' | 'timestamp';

/** The basic properties in flag order; `clusterId` is deprecated and not stored. */
const PROPERTIES: readonly (readonly [keyof MessageProperties | 'clusterId', Kind])[] = [
  ['contentType', 'shortstr'],
  ['contentEncoding', 'shortstr'],
  ['headers', 'table'],
  ['deliveryMode', 'octet'],
  ['priority', 'octet'],
  ['correlationId', 'shortstr'],
  ['replyTo', 'shortstr'],
  ['expiration', 'shortstr'],
  ['messageId', 'shortstr'],
  ['timestamp', 'timestamp'],
  ['type', 'shortstr'],
  ['userId', 'shortstr'],
  ['appId', 'shortstr'],
  ['clusterId', 'shortstr'],
];

/** A decoded content header; its properties hold every key, undefined where absent. */
export interface ContentHeader {
  readonly classId: number;
  readonly bodySize: number;
  readonly properties: MessageProperties;
}

/** Reads a content header frame's payload. */
export function readContentHeader(r: Reader): ContentHeader {
  const classId = r.u16();
  r.u16(); // weight, unused
  const size = r.u64Number();
  if (size > Number.MAX_SAFE_INTEGER) throw new WireSyntaxError('body size too large');
  return { classId, bodySize: size, properties: readPropertyList(r) };
}

/**
 * Reads the content headers of one publisher, in place: the last header read is this object's
 * fields (no object made per message). While a header's property flags and values are the same
 * bytes as the last one's, the properties are the same object, decoded once (never to be changed
 * by whoever reads them).
 */
export class ContentHeaderReader implements ContentHeader {
  classId = 0;
  bodySize = 0;
  properties: MessageProperties = {};
  #bytes: Buffer | undefined;

  /** Reads the header `bytes[start, end)` into `classId`, `bodySize` and `properties`. */
  read(bytes: Buffer, start: number, end: number): void {
    if (end - start < 12) throw new WireSyntaxError('frame payload ends inside a field');
    this.classId = bytes.readUInt16BE(start);
    // Then the weight, unused, and the body size in 64 bits.
    const size = bytes.readUInt32BE(start + 4) * 2 ** 32 + bytes.readUInt32BE(start + 8);
    if (size > Number.MAX_SAFE_INTEGER) throw new WireSyntaxError('body size too large');
    this.bodySize = size;
    const at = start + 12;
    const last = this.#bytes;
    if (last !== undefined && sameBytes(bytes, at, end, last)) return;
    const r = new Reader(bytes, at, end);
    this.properties = readPropertyList(r);
    this.#bytes = Buffer.from(bytes.subarray(at, r.pos));
  }
}

/** Whether `payload[at, end)` holds exactly `bytes`. */
function sameBytes(payload: Buffer, at: number, end: number, bytes: Buffer): boolean {
  if (end - at !== bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (payload[at + i] !== bytes[i]) return false;
  return true;
}

/** Reads the property flags and the properties they say are set. */
function readPropertyList(r: Reader): MessageProperties {
  const flags = r.u16();
  if (flags & 1) throw new WireSyntaxError('property flags continuation is not defined for basic');
  // Every property in its slot, undefined when absent: one object shape for every header.
  const properties: Record<string, unknown> = {
    contentType: undefined,
    contentEncoding: undefined,
    headers: undefined,
    deliveryMode: undefined,
    priority: undefined,
    correlationId: undefined,
    replyTo: undefined,
    expiration: undefined,
    messageId: undefined,
    timestamp: undefined,
    type: undefined,
    userId: undefined,
    appId: undefined,
  };
  for (let i = 0; flags !== 0 && i < PROPERTIES.length; i++) {
    if ((flags & (1 << (15 - i))) === 0) continue;
    const [name, kind] = PROPERTIES[i]!;
    let value: unknown;
    if (kind === 'shortstr') value = r.shortstr();
    else if (kind === 'octet') value = r.u8();
    else if (kind === 'table') value = readTable(r);
    else value = r.timestamp();
    if (name !== 'clusterId') properties[name] = value;
  }
  return properties as MessageProperties;
}

/** Writes a basic content header's payload. */
export function writeContentHeader(
  w: Writer,
  bodySize: number,
  properties: Readonly<MessageProperties>,
): void {
  w.u16(60);
  w.u16(0);
  w.u64Number(bodySize);
  writePropertyList(w, properties);
}

/** Writes the property flags and the properties set, as a content header carries them. */
export function writePropertyList(w: Writer, properties: Readonly<MessageProperties>): void {
  // Each property read by name, in flag order (operands of `|` run left to right): a delivery
  // writes this for every message.
  const p = properties as MessageProperties & { readonly clusterId?: string };
  const flagsAt = w.pos;
  w.u16(0);
  const flags =
    flag(w, p.contentType, 15, SHORTSTR) |
    flag(w, p.contentEncoding, 14, SHORTSTR) |
    flag(w, p.headers, 13, TABLE) |
    flag(w, p.deliveryMode, 12, OCTET) |
    flag(w, p.priority, 11, OCTET) |
    flag(w, p.correlationId, 10, SHORTSTR) |
    flag(w, p.replyTo, 9, SHORTSTR) |
    flag(w, p.expiration, 8, SHORTSTR) |
    flag(w, p.messageId, 7, SHORTSTR) |
    flag(w, p.timestamp, 6, TIMESTAMP) |
    flag(w, p.type, 5, SHORTSTR) |
    flag(w, p.userId, 4, SHORTSTR) |
    flag(w, p.appId, 3, SHORTSTR) |
    flag(w, p.clusterId, 2, SHORTSTR);
  w.buf.writeUInt16BE(flags, flagsAt);
}

const SHORTSTR = 0;
const OCTET = 1;
const TABLE = 2;
const TIMESTAMP = 3;

/** Writes a property that is set; returns its flag bit, or 0 when it is not set. */
function flag(w: Writer, value: unknown, bit: number, kind: number): number {
  if (value === undefined || value === null) return 0;
  if (kind === SHORTSTR) w.shortstr(String(value));
  else if (kind === OCTET) w.u8(Number(value) & 0xff);
  else if (kind === TABLE) writeTable(w, value as FieldTable);
  else w.timestamp(value as Date);
  return 1 << bit;
}
