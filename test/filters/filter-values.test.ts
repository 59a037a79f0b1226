import { describe, expect, it } from 'vitest';
import { filterValueKey, filterValues, renderScalar } from '../../src/filters/filter-values.js';

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

  it('key a header by what decides its filter values', () => {
    expect([undefined, null].map(filterValueKey)).toEqual([undefined, undefined]);
    expect(['a,b', 12, true].map(filterValueKey)).toEqual(['a,b', '12', 'true']);
    // Present without a rendering: tagged with nothing, as an empty list.
    expect([new Date(0), ['a'], ''].map(filterValueKey)).toEqual(['', '', '']);
  });
});
