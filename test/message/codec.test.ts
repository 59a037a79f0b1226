import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { messageCodec, messageViewCodec } from '../../src/message/codec.js';
import { normalizeMessage } from '../../src/message/normalize.js';
import type { FieldValue, MessageProperties, StoredMessage } from '../../src/message/types.js';
import { storedForm } from '../support/stored-form.js';

const { value: fieldValue } = fc.letrec<{ value: FieldValue; table: Record<string, FieldValue> }>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.double(),
      fc.maxSafeInteger(),
      fc.bigInt(),
      fc.boolean(),
      fc.constant(null),
      fc.date({ noInvalidDate: true }),
      fc.uint8Array({ maxLength: 16 }),
      fc.array(tie('value'), { maxLength: 4 }),
      tie('table'),
    ),
    table: fc.dictionary(fc.string({ maxLength: 10 }), tie('value'), {
      maxKeys: 4,
      noNullPrototype: true,
    }),
  }),
);

const shortString = fc.string({ unit: 'grapheme', maxLength: 30 });

const properties: fc.Arbitrary<MessageProperties> = fc.record(
  {
    contentType: shortString,
    contentEncoding: shortString,
    headers: fc.dictionary(fc.string({ maxLength: 12 }), fieldValue, {
      maxKeys: 6,
      noNullPrototype: true,
    }),
    deliveryMode: fc.constantFrom(1, 2),
    priority: fc.integer({ min: 0, max: 255 }),
    correlationId: shortString,
    replyTo: shortString,
    expiration: fc.nat().map(String),
    messageId: shortString,
    timestamp: fc.date({ noInvalidDate: true }),
    type: shortString,
    userId: shortString,
    appId: shortString,
  },
  { requiredKeys: [], noNullPrototype: true },
);

const message: fc.Arbitrary<StoredMessage> = fc
  .record(
    {
      exchange: shortString,
      routingKey: fc.string({ maxLength: 300 }),
      properties,
      body: fc.uint8Array({ maxLength: 300 }),
    },
    { noNullPrototype: true },
  )
  .map(storedForm);

/** `m` encoded between `before` and `after` filler bytes, as a log's read buffer holds it. */
function encodedAmid(
  m: StoredMessage,
  before: number,
  after: number,
): { framed: Uint8Array; length: number } {
  const bytes = messageCodec.encode(m);
  const framed = new Uint8Array(before + bytes.length + after).fill(0xee);
  framed.set(bytes, before);
  return { framed, length: bytes.length };
}

describe('messageCodec', () => {
  test('a record that carries only a priority decodes to the shared properties of publishing', () => {
    const published = normalizeMessage('body', { priority: 5 }, '', 'q');
    const decoded = messageCodec.decode(messageCodec.encode(published).slice());
    expect(decoded).toStrictEqual(published);
    expect(decoded.properties).toBe(published.properties);
  });

  test('a message reads back exactly as it was stored', () => {
    fc.assert(
      fc.property(message, (m) => {
        const bytes = messageCodec.encode(m);
        expect(messageCodec.decode(bytes.slice())).toStrictEqual(m);
      }),
      { numRuns: 500 },
    );
  });

  test('a message decodes the same from the middle of a larger buffer', () => {
    fc.assert(
      fc.property(message, fc.nat(64), fc.nat(64), (m, before, after) => {
        const { framed, length } = encodedAmid(m, before, after);
        expect(messageCodec.decodeFrom!(framed, before, length)).toStrictEqual(m);
      }),
      { numRuns: 200 },
    );
  });

  test('the view codec decodes a message with the same fields, its body a view of the bytes read', () => {
    fc.assert(
      fc.property(message, fc.nat(64), fc.nat(64), (m, before, after) => {
        const { framed, length } = encodedAmid(m, before, after);
        const read = messageViewCodec.decodeView!(framed, before, length);
        expect(read.exchange).toBe(m.exchange);
        expect(read.routingKey).toBe(m.routingKey);
        expect(read.properties).toStrictEqual(m.properties);
        expect(read.body).toEqual(m.body);
        expect(read.body.buffer).toBe(framed.buffer);
        expect(read.body.byteOffset).toBe(before + length - m.body.byteLength);
      }),
      { numRuns: 200 },
    );
  });

  test('the plain message codec copies what it decodes', () => {
    expect(messageCodec.decodeView).toBeUndefined();
    const bytes = messageCodec.encode(normalizeMessage('abc', undefined, '', 'q')).slice();
    const read = messageCodec.decodeFrom!(bytes, 0, bytes.length);
    expect(read.body.buffer).not.toBe(bytes.buffer);
  });

  test('encoding into a caller buffer writes the same bytes, or reports that they do not fit', () => {
    fc.assert(
      fc.property(message, fc.nat(64), fc.boolean(), (m, offset, asBuffer) => {
        const expected = messageCodec.encode(m).slice();
        const size = offset + expected.length;
        const target = asBuffer ? Buffer.alloc(size + 8) : new Uint8Array(size + 8);
        expect(messageCodec.encodeInto!(m, target, offset)).toBe(expected.length);
        expect(Uint8Array.from(target.subarray(offset, size))).toEqual(expected);
        expect(messageCodec.encodeInto!(m, new Uint8Array(size - 1), offset)).toBe(-1);
        // The scratch path is unaffected by a refused or finished encodeInto.
        expect(messageCodec.encode(m)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  test('tables of more than 127 and more than 16,383 entries read back, encoded into a buffer too', () => {
    for (const entries of [127, 128, 300, 16_384]) {
      const headers = Object.fromEntries(
        Array.from({ length: entries }, (_, i) => [`h${i}`, i % 2 ? i : `v${i}`]),
      );
      const m = storedForm({
        exchange: 'x',
        routingKey: 'k',
        properties: { headers: { ...headers, nested: { ...headers } } },
        body: new Uint8Array([1, 2, 3]),
      });
      const expected = messageCodec.encode(m).slice();
      expect(messageCodec.decode(expected)).toStrictEqual(m);
      const target = Buffer.alloc(expected.length + 10);
      expect(messageCodec.encodeInto!(m, target, 10)).toBe(expected.length);
      // Compared natively: element by element, vitest takes seconds over these bytes.
      expect(Buffer.compare(target.subarray(10), expected)).toBe(0);
      expect(messageCodec.encodeInto!(m, new Uint8Array(expected.length + 9), 10)).toBe(-1);
    }
  });

  test('names that differ only in the middle are never mixed up', () => {
    // Same length, first and last byte: candidates for the same slot of the string cache.
    const names = ['a1z', 'a2z', 'a1z', 'queue-0001-end', 'queue-0002-end', 'ä1z', 'a1z'];
    for (const routingKey of names) {
      const m = storedForm({
        exchange: '',
        routingKey,
        properties: { headers: { [routingKey]: routingKey } },
        body: new Uint8Array(),
      });
      expect(messageCodec.decode(messageCodec.encode(m).slice())).toStrictEqual(m);
    }
  });

  test('consecutive records read back their own names, whether they repeat or not', () => {
    // Few distinct names, so that runs repeat; some past one length byte, some empty.
    const name = fc.constantFrom(
      '',
      'q',
      'jobs',
      'amq.topic',
      'jobs\u00e9',
      'x'.repeat(130),
      'x'.repeat(63),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(name, name), { minLength: 1, maxLength: 30 }), (pairs) => {
        const records = pairs.map(([exchange, routingKey]) =>
          messageCodec
            .encode({ exchange, routingKey, properties: {}, body: new Uint8Array(3) })
            .slice(),
        );
        for (const [i, bytes] of records.entries()) {
          const [exchange, routingKey] = pairs[i]!;
          const read =
            i % 2
              ? messageCodec.decode(bytes)
              : messageViewCodec.decodeView!(bytes, 0, bytes.length);
          expect([read.exchange, read.routingKey]).toEqual([exchange, routingKey]);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('header numbers keep their kind: integers, fractions, -0 and bigints', () => {
    const m: StoredMessage = {
      exchange: '',
      routingKey: 'q',
      properties: {
        headers: { int: 7, float: 7.5, negZero: -0, big: 2 ** 40, long: 5n, huge: 2n ** 80n },
      },
      body: new Uint8Array(),
    };
    const headers = messageCodec.decode(messageCodec.encode(m)).properties.headers!;
    expect(headers.int).toBe(7);
    expect(headers.float).toBe(7.5);
    expect(Object.is(headers.negZero, -0)).toBe(true);
    expect(headers.big).toBe(2 ** 40);
    expect(headers.long).toBe(5n);
    expect(headers.huge).toBe(2n ** 80n);
  });

  test('a header named __proto__ stays a plain header', () => {
    const headers = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, FieldValue>;
    const m: StoredMessage = {
      exchange: '',
      routingKey: '',
      properties: { headers },
      body: new Uint8Array(),
    };
    const decoded = messageCodec.decode(messageCodec.encode(m)).properties.headers!;
    expect('toString' in decoded || 'constructor' in decoded).toBe(false);
    expect(Object.keys(decoded)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(decoded, '__proto__')?.value).toEqual({
      polluted: true,
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('decoded messages own their bytes', () => {
    const m: StoredMessage = {
      exchange: 'x',
      routingKey: 'k',
      properties: { headers: { a: [1, { b: 2 }] } },
      body: new Uint8Array([1, 2, 3]),
    };
    const bytes = messageCodec.encode(m).slice();
    const decoded = messageCodec.decode(bytes);
    bytes.fill(0);
    expect(decoded.body).toEqual(new Uint8Array([1, 2, 3]));
    expect(decoded.properties.headers).toEqual({ a: [1, { b: 2 }] });
  });

  test('truncated or garbled bytes fail to decode instead of yielding a wrong message', () => {
    const m: StoredMessage = {
      exchange: 'exchange',
      routingKey: 'routing.key',
      properties: { messageId: 'id-1', headers: { a: 'b' } },
      body: new Uint8Array(0),
    };
    const bytes = messageCodec.encode(m).slice();
    for (const cut of [0, 1, 3, 8]) {
      expect(() => messageCodec.decode(bytes.subarray(0, cut))).toThrow(RangeError);
    }
    const unknownProperty = bytes.slice();
    unknownProperty[1] = 0xff;
    expect(() => messageCodec.decode(unknownProperty)).toThrow(RangeError);
  });

  test('byteLength counts the body and grows with names, properties and headers', () => {
    const base: StoredMessage = {
      exchange: '',
      routingKey: 'q',
      properties: {},
      body: new Uint8Array(100),
    };
    const size = messageCodec.byteLength(base);
    expect(size).toBeGreaterThanOrEqual(100);
    expect(messageCodec.byteLength({ ...base, body: new Uint8Array(200) })).toBe(size + 100);
    expect(
      messageCodec.byteLength({ ...base, properties: { headers: { key: 'value' } } }),
    ).toBeGreaterThan(size + 8);
  });
});
