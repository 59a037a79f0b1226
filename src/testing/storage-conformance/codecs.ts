/** The record codecs the suite writes with, exported for adapters' own tests. */
import type { RecordCodec } from '../../storage/types.js';

/**
 * The record codec the suite writes with: strings, encoded as UTF-8, so persistent adapters
 * store real bytes. `byteLength` is the UTF-8 length.
 */
export const testRecordCodec: RecordCodec<string> = {
  byteLength: (record) => Buffer.byteLength(record),
  encode: (record) => encoder.encode(record),
  decode: (bytes) => decoder.decode(bytes),
};
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * {@link testRecordCodec} with `packing`: a record's text up to its first `-` is its envelope
 * (`rec-` for the suite's records), the rest its payload. Every test runs with it too.
 */
export const packedTestRecordCodec: RecordCodec<string> = {
  ...testRecordCodec,
  packing: {
    payload: (record) => encoder.encode(record.slice(envelopeEnd(record))),
    envelope: (record) => record.slice(0, envelopeEnd(record)),
    matches: (record, envelope) =>
      envelopeEnd(record) === envelope.length && record.startsWith(envelope),
    unpack: (envelope, buffer, byteOffset, byteLength) =>
      envelope + decoder.decode(new Uint8Array(buffer, byteOffset, byteLength)),
  },
};
const envelopeEnd = (record: string) => record.indexOf('-') + 1;
