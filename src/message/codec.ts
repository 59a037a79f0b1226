/**
 * The record codec of stored messages, used by persistent storage adapters: the format is
 * described in `record-format.ts`, written by `record-encoder.ts` and read by
 * `record-decoder.ts`. Format 1 records are already on users' disks, pinned by
 * test/storage/fixtures/codec-v1.bin: a change must keep reading them.
 */
import type { RecordCodec } from '../storage/types.js';
import { EMPTY_PROPERTIES } from './normalize.js';
import { messagePacking } from './packed-message.js';
import { decodeMessage, decodeMessageFrom, decodeMessageView } from './record-decoder.js';
import { encodeMessage, encodeMessageInto } from './record-encoder.js';
import type { FieldTable, MessageProperties, StoredMessage } from './types.js';

/** Bytes the record accounts for besides its body and names (a rough, fixed overhead). */
const OVERHEAD = 16;

/**
 * The record's accounted size: body, names, string properties and header names and string
 * values, plus a fixed overhead per property and header. It walks one level of headers only,
 * so it stays cheap while tracking what dominates real messages.
 */
function byteLength(message: StoredMessage): number {
  let size = OVERHEAD + message.body.length + message.exchange.length + message.routingKey.length;
  const props = message.properties;
  if (props === EMPTY_PROPERTIES) return size;
  for (const key in props) {
    const value = props[key as keyof MessageProperties];
    if (typeof value === 'string') size += value.length + 1;
    else if (key === 'headers') {
      const headers = value as FieldTable;
      for (const name in headers) {
        const v = headers[name];
        size += name.length + 2 + (typeof v === 'string' ? v.length : 8);
      }
    } else size += 8;
  }
  return size;
}

/** The record codec of stored messages. */
export const messageCodec: RecordCodec<StoredMessage> = {
  byteLength,
  encode: encodeMessage,
  encodeInto: encodeMessageInto,
  decode: decodeMessage,
  decodeFrom: decodeMessageFrom,
  packing: messagePacking,
};

/**
 * {@link messageCodec} reading bodies as views of the adapter's read buffers (`decodeView`), for
 * logs whose readers hold a message briefly, as a stream's consumers do: a message kept long
 * keeps the whole buffer alive, which a queue holding a few messages for a long time should not.
 */
export const messageViewCodec: RecordCodec<StoredMessage> = {
  ...messageCodec,
  decodeView: decodeMessageView,
};
