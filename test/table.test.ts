import { expect, it } from 'vitest';
import { emptyTable } from '../src/table.js';

it('makes tables that inherit no key and keep __proto__ as a key', () => {
  const table = emptyTable<unknown>();
  for (const key of ['constructor', 'toString', 'hasOwnProperty', '__proto__', 'valueOf']) {
    expect(table[key]).toBeUndefined();
    expect(key in table).toBe(false);
  }
  // Assigning through the accessor is the attack this test replays.
  // biome-ignore lint/suspicious/noProto: the key must be written as user input writes it
  table.__proto__ = { polluted: true };
  table['constructor' as string] = 'c';
  expect(Object.keys(table)).toEqual(['__proto__', 'constructor']);
  expect('polluted' in table).toBe(false);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(emptyTable()).not.toBe(emptyTable());
  expect(JSON.stringify(table)).toBe('{"__proto__":{"polluted":true},"constructor":"c"}');
});
