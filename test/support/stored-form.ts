import type { FieldValue, StoredMessage } from '../../src/message/types.js';
import { emptyTable } from '../../src/table.js';

/**
 * `m` as a queue stores it: every header table (nested ones too) without inherited keys, as
 * `normalizeMessage` copies them and the codecs decode them. Written out by hand, for tests whose
 * messages bypass `normalizeMessage`.
 */
export function storedForm(m: StoredMessage): StoredMessage {
  const headers = m.properties.headers;
  if (headers === undefined) return m;
  return { ...m, properties: { ...m.properties, headers: withoutPrototypes(headers) as never } };
}

function withoutPrototypes(value: FieldValue): FieldValue {
  if (Array.isArray(value)) return value.map(withoutPrototypes);
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Date || value instanceof Uint8Array) return value;
  const out: Record<string, FieldValue> = emptyTable();
  for (const [key, item] of Object.entries(value)) out[key] = withoutPrototypes(item);
  return out;
}
