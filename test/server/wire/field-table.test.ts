import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Reader, WireSyntaxError, Writer } from '../../../src/server/wire/bytes.js';
import {
  readTable,
  readTypedTable,
  type TypedTable,
  type TypedValue,
  writeTable,
  writeTypedTable,
} from '../../../src/server/wire/field-table.js';

const f32 = (n: number) => Math.fround(n);

/** Every RabbitMQ field type, nested. */
const typedValue: fc.Arbitrary<TypedValue> = fc.letrec<{ value: TypedValue; table: TypedTable }>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.boolean().map((value) => ({ type: 't', value }) as const),
      fc.integer({ min: -128, max: 127 }).map((value) => ({ type: 'b', value }) as const),
      fc.integer({ min: 0, max: 255 }).map((value) => ({ type: 'B', value }) as const),
      fc.integer({ min: -32768, max: 32767 }).map((value) => ({ type: 's', value }) as const),
      fc.integer({ min: 0, max: 65535 }).map((value) => ({ type: 'u', value }) as const),
      fc.integer().map((value) => ({ type: 'I', value }) as const),
      fc.integer({ min: 0, max: 0xffffffff }).map((value) => ({ type: 'i', value }) as const),
      fc
        .bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
        .map((value) => ({ type: 'l', value }) as const),
      fc.float({ noNaN: true }).map((value) => ({ type: 'f', value: f32(value) }) as const),
      fc.double({ noNaN: true }).map((value) => ({ type: 'd', value }) as const),
      fc
        .record({
          scale: fc.integer({ min: 0, max: 255 }),
          unscaled: fc.integer({ min: 0, max: 0xffffffff }),
        })
        .map((value) => ({ type: 'D', value }) as const),
      fc.string().map((value) => ({ type: 'S', value }) as const),
      fc.uint8Array().map((value) => ({ type: 'x', value: Buffer.from(value) }) as const),
      fc.constant({ type: 'V', value: null } as const),
      fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((value) => ({ type: 'T', value }) as const),
      fc.array(tie('value'), { maxLength: 4 }).map((value) => ({ type: 'A', value }) as const),
      tie('table').map((value) => ({ type: 'F', value }) as const),
    ),
    table: fc.array(fc.tuple(fc.string({ maxLength: 20 }), tie('value')), { maxLength: 5 }),
  }),
).value;

const typedTable = fc.array(fc.tuple(fc.string({ maxLength: 20 }), typedValue), { maxLength: 8 });

function encodeTyped(table: TypedTable): Buffer {
  const w = new Writer(16);
  writeTypedTable(w, table);
  return w.take();
}

describe('typed field tables', () => {
  test('every type round-trips with its tag, and re-encodes to the same bytes', () => {
    fc.assert(
      fc.property(typedTable, (table) => {
        const bytes = encodeTyped(table);
        const decoded = readTypedTable(new Reader(bytes));
        expect(decoded).toEqual(table);
        expect(encodeTyped(decoded)).toEqual(bytes);
      }),
    );
  });

  test('a byte stays a byte and a long a long', () => {
    const bytes = encodeTyped([
      ['b', { type: 'b', value: -1 }],
      ['l', { type: 'l', value: 5n }],
    ]);
    expect([...readTypedTable(new Reader(bytes))]).toEqual([
      ['b', { type: 'b', value: -1 }],
      ['l', { type: 'l', value: 5n }],
    ]);
  });
});

describe('plain field tables', () => {
  test('plain values read back as they were written', () => {
    const table = {
      int: 7,
      wide: 2 ** 40,
      big: 2n ** 62n,
      float: 0.25,
      text: 'é',
      yes: true,
      none: null,
      when: new Date(1_700_000_000_000),
      bytes: new Uint8Array([1, 2, 3]),
      list: [1, 'a', [true]],
      nested: { deeper: { x: -1 } },
    };
    const w = new Writer(8);
    writeTable(w, table);
    expect(readTable(new Reader(w.take()))).toEqual(table);
  });

  test('a __proto__ key is an own entry, never the prototype', () => {
    // key "__proto__" → table { polluted: true }
    const inner = Buffer.from([8, ...Buffer.from('polluted'), 0x74, 1]);
    const entry = Buffer.concat([
      Buffer.from([9]),
      Buffer.from('__proto__'),
      Buffer.from('F'),
      Buffer.from([0, 0, 0, inner.length]),
      inner,
    ]);
    const bytes = Buffer.concat([Buffer.from([0, 0, 0, entry.length]), entry]);
    const table = readTable(new Reader(bytes));
    expect(Object.getPrototypeOf(table)).toBe(Object.prototype);
    expect(Object.keys(table)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test.each([
    ['an unknown tag', Buffer.from([0, 0, 0, 3, 1, 0x6b, 0x5a])],
    ['a length past the frame', Buffer.from([0, 0, 0, 9, 1, 0x6b])],
    ['a value cut short', Buffer.from([0, 0, 0, 4, 1, 0x6b, 0x49, 0])],
  ])('%s is a syntax error', (_, bytes) => {
    expect(() => readTable(new Reader(bytes))).toThrow(WireSyntaxError);
    expect(() => readTypedTable(new Reader(bytes))).toThrow(WireSyntaxError);
  });

  test('nesting beyond 64 levels is refused, not a stack overflow', () => {
    let value = Buffer.from([0, 0, 0, 0]);
    for (let i = 0; i < 1000; i++) {
      const entry = Buffer.concat([Buffer.from([1, 0x6b, 0x46]), value]);
      value = Buffer.concat([Buffer.from([0, 0, 0, 0]), entry]);
      value.writeUInt32BE(entry.length, 0);
    }
    expect(() => readTable(new Reader(value))).toThrow(/nested too deeply/);
  });
});
