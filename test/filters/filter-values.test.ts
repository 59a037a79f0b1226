import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { filterValues, listHas, renderScalar, splitList } from '../../src/filters/filter-values.js';

describe('message filter values', () => {
  it('split a comma list into trimmed, non-empty pieces', () => {
    expect(filterValues(' a, b ,,c ')).toEqual(['a', 'b', 'c']);
    expect(filterValues('')).toEqual([]);
    expect(filterValues(12)).toEqual(['12']);
    expect(filterValues(null)).toEqual([]);
    expect(filterValues(['a'])).toEqual([]);
  });

  it('render scalars as strings and nothing else', () => {
    expect([5, 5n, true, 'x', 1.25].map(renderScalar)).toEqual(['5', '5', 'true', 'x', '1.25']);
    expect([null, undefined, new Date(0), {}, []].map(renderScalar)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('find a value in a list exactly as splitting would, whitespace of any kind included', () => {
    const piece = fc
      .array(
        fc.constantFrom('a', 'b', 'ab', ' ', '\t', '\u00a0', '\u2003', '\ufeff', '\n', 'x y'),
        {
          maxLength: 4,
        },
      )
      .map((p) => p.join(''));
    const list = fc.array(piece, { maxLength: 4 }).map((p) => p.join(','));
    fc.assert(
      fc.property(list, fc.constantFrom('a', 'b', 'ab', 'x y', 'ba'), (text, value) => {
        expect(listHas(text, value)).toBe(splitList(text).includes(value));
      }),
      { numRuns: 2000 },
    );
  });
});
