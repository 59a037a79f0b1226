/** Renderings shared by the commands that print stored data. */
import type { Writable } from 'node:stream';
import { isWideTimestamp } from '../message/timestamp.js';

/** `1536` → `1.5 KiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** `1, 'message'` → `1 message`; `2, 'message'` → `2 messages`. */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes as their UTF-8 text when they are valid UTF-8, else as hex. */
export function textOrHex(bytes: Uint8Array): { encoding: 'utf8' | 'hex'; text: string } {
  try {
    return { encoding: 'utf8', text: utf8.decode(bytes) };
  } catch {
    return { encoding: 'hex', text: Buffer.from(bytes).toString('hex') };
  }
}

/**
 * A field value as JSON can hold it: bigints as decimal strings, dates as ISO strings (beyond
 * a `Date`, `{ seconds }` as a decimal string), bytes
 * as hex, tables and arrays converted member by member (into prototype-free objects).
 */
export function jsonOf(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  // A timestamp beyond a Date (which has no ISO string): its count of seconds.
  if (isWideTimestamp(value)) return { seconds: value.seconds.toString() };
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return { hex: Buffer.from(value).toString('hex') };
  if (Array.isArray(value)) return value.map(jsonOf);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = Object.create(null);
    for (const [key, member] of Object.entries(value)) {
      if (member !== undefined) out[key] = jsonOf(member);
    }
    return out;
  }
  return value;
}

/** Writes `value` as indented JSON and a newline. */
export function writeJson(out: Writable, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** An error's message without the AMQP reply text mqlite errors start with. */
export function detailOf(error: Error): string {
  return error.message.replace(/^[A-Z_]+ - /, '');
}
