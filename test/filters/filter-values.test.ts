import { describe, expect, it } from 'vitest';
import { filterValues, renderScalar } from '../../src/filters/filter-values.js';

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
});
