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
   * The basic.publish of a method frame's payload; undefined for any other method, or for one
   * whose arguments do not fill the payload exactly (the generic decoder reports those).
   */
  read(payload: Buffer): Method | undefined {
    if (payload[0] !== 0 || payload[1] !== 60 || payload[2] !== 0 || payload[3] !== 40) {
      return undefined;
    }
    const length = payload.length;
    if (length < 9) return undefined;
    const ticket = (payload[4]! << 8) | payload[5]!;
    const exchangeAt = 7;
    const keyLengthAt = exchangeAt + payload[6]!;
    if (keyLengthAt + 2 > length) return undefined;
    const keyAt = keyLengthAt + 1;
    const bitsAt = keyAt + payload[keyLengthAt]!;
    if (bitsAt + 1 !== length) return undefined;
    const bits = payload[bitsAt]!;
    const args = {
      reserved1: ticket,
      exchange: decode(this.#exchange, payload, exchangeAt, keyLengthAt),
      routingKey: decode(this.#routingKey, payload, keyAt, bitsAt),
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
