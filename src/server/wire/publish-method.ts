/**
 * basic.publish, the method of every published message, read in place: its exchange and routing
 * key are decoded once and reused while a publisher sends the same bytes again, as it does
 * message after message.
 */
import type { Buffer } from 'node:buffer';
import { type Method, methodByName } from './spec.js';

const PUBLISH = methodByName('basic.publish');

/** A string decoded from bytes, kept with them. */
interface Decoded {
  bytes: Uint8Array;
  text: string;
}

export class PublishReader {
  readonly #exchange: Decoded = { bytes: new Uint8Array(0), text: '' };
  readonly #routingKey: Decoded = { bytes: new Uint8Array(0), text: '' };

  /**
   * The basic.publish of the method frame payload `bytes[start, end)`; undefined for any other
   * method, or for one whose arguments do not fill the payload exactly (the generic decoder
   * reports those).
   */
  read(bytes: Buffer, start: number, end: number): Method | undefined {
    if (
      bytes[start] !== 0 ||
      bytes[start + 1] !== 60 ||
      bytes[start + 2] !== 0 ||
      bytes[start + 3] !== 40
    ) {
      return undefined;
    }
    if (end - start < 9) return undefined;
    const ticket = (bytes[start + 4]! << 8) | bytes[start + 5]!;
    const exchangeAt = start + 7;
    const keyLengthAt = exchangeAt + bytes[start + 6]!;
    if (keyLengthAt + 2 > end) return undefined;
    const keyAt = keyLengthAt + 1;
    const bitsAt = keyAt + bytes[keyLengthAt]!;
    if (bitsAt + 1 !== end) return undefined;
    const bits = bytes[bitsAt]!;
    const args = {
      reserved1: ticket,
      exchange: decode(this.#exchange, bytes, exchangeAt, keyLengthAt),
      routingKey: decode(this.#routingKey, bytes, keyAt, bitsAt),
      mandatory: (bits & 1) !== 0,
      immediate: (bits & 2) !== 0,
    };
    const method: Method = { name: 'basic.publish', def: PUBLISH, args };
    return method;
  }
}

/** `payload[start, end)` as UTF-8: the string of the last call when the bytes are the same. */
function decode(last: Decoded, payload: Buffer, start: number, end: number): string {
  const bytes = last.bytes;
  const n = end - start;
  if (bytes.length === n) {
    let same = true;
    for (let i = 0; i < n; i++) {
      if (bytes[i] !== payload[start + i]) {
        same = false;
        break;
      }
    }
    if (same) return last.text;
  }
  last.bytes = new Uint8Array(payload.subarray(start, end));
  last.text = payload.toString('utf8', start, end);
  return last.text;
}
