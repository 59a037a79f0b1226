/**
 * The content header of class basic: body size and the fourteen basic properties, each present
 * when its flag bit is set (bit 15 first).
 */
import type { MessageProperties } from '../../message/types.js';
import { type Reader, WireSyntaxError, type Writer } from './bytes.js';
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
  return { classId, bodySize: size, properties: properties as MessageProperties };
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
  const flagsAt = w.pos;
  w.u16(0);
  let flags = 0;
  const values = properties as Record<string, unknown>;
  for (let i = 0; i < PROPERTIES.length; i++) {
    const [name, kind] = PROPERTIES[i]!;
    const value = values[name];
    if (value === undefined || value === null) continue;
    flags |= 1 << (15 - i);
    if (kind === 'shortstr') w.shortstr(String(value));
    else if (kind === 'octet') w.u8(Number(value) & 0xff);
    else if (kind === 'table') writeTable(w, value as Record<string, never>);
    else w.timestamp(value as Date);
  }
  w.buf.writeUInt16BE(flags, flagsAt);
}
