/** Checks of the values an exchange declaration or binding takes, before anything changes. */
import type { FieldTable } from '../message/types.js';

const MAX_SHORTSTR_BYTES = 255;

/** A boolean option, or its default when absent. */
export function flag(value: unknown, fallback: boolean, what: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new TypeError(`${what} must be a boolean`);
  return value;
}

export function checkShortString(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a string`);
  if (Buffer.byteLength(value, 'utf8') > MAX_SHORTSTR_BYTES) {
    throw new RangeError(`${what} is longer than ${MAX_SHORTSTR_BYTES} bytes`);
  }
}

/** A private copy of an argument table, so later changes by the caller change nothing stored. */
export function copyArgs(args: unknown, what: string): FieldTable {
  if (args === undefined) return {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new TypeError(`${what} must be a plain object`);
  }
  try {
    return structuredClone(args as FieldTable);
  } catch (cause) {
    throw new TypeError(`${what} must hold only field-table values`, { cause });
  }
}
