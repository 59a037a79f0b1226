import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CompiledStreamFilter,
  parseStreamFilter,
  ValueIndex,
} from '../../src/filters/index.js';

function compile(f: unknown, extra: Record<string, unknown> = {}): CompiledStreamFilter {
  return parseStreamFilter({ 'x-stream-filter': f, ...extra })!;
}

const tagged = (value: unknown, extra: Record<string, unknown> = {}) => ({
  'x-stream-filter-value': value,
  ...extra,
});

function matchesOf(index: ValueIndex<string>, headers: Record<string, unknown>): string[] {
  const ids: string[] = [];
  index.forEachMatch(headers, (id) => ids.push(id));
  return ids.sort();
}

describe('value index of consumers', () => {
  it('indexes only filters whose matches must carry a filter value', () => {
    const index = new ValueIndex<string>();
    expect(index.insert('red', compile('red'))).toBe(true);
    expect(index.insert('red-eu', compile({ 'x-stream-filter': 'red', region: 'eu' }))).toBe(true);
    expect(index.insert('any', compile('red,blue', { 'x-filter-match-type': 'any' }))).toBe(true);
    expect(index.insert('kv', compile({ region: 'eu' }))).toBe(false);
    const mixedAny = compile(
      { 'x-stream-filter': 'red', region: 'eu' },
      { 'x-filter-match-type': 'any' },
    );
    expect(index.insert('mixed-any', mixedAny)).toBe(false);
    expect(index.insert('unfiltered', compile('red', { 'x-stream-match-unfiltered': true }))).toBe(
      false,
    );
    expect(index.size).toBe(3);
  });

  it('finds the consumers whose filter matches, once each', () => {
    const index = new ValueIndex<string>();
    index.insert('red', compile('red'));
    index.insert('red-and-blue', compile('red,blue'));
    index.insert('red-or-blue', compile('red,blue', { 'x-filter-match-type': 'any' }));
    index.insert('red-eu', compile({ 'x-stream-filter': 'red', region: 'eu' }));
    expect(matchesOf(index, tagged('red'))).toEqual(['red', 'red-or-blue']);
    expect(matchesOf(index, tagged('blue, red, red', { region: 'eu' }))).toEqual([
      'red',
      'red-and-blue',
      'red-eu',
      'red-or-blue',
    ]);
    expect(matchesOf(index, tagged('green'))).toEqual([]);
    expect(matchesOf(index, { region: 'eu' })).toEqual([]);
    expect(index.remove('red')).toBe(true);
    expect(index.remove('red')).toBe(false);
    expect(matchesOf(index, tagged('red'))).toEqual(['red-or-blue']);
    index.clear();
    expect(matchesOf(index, tagged('red'))).toEqual([]);
  });

  it('agrees with asking every consumer', () => {
    const value = fc.constantFrom('a', 'b', 'c', 'd');
    const filterArb = fc
      .tuple(
        fc.array(value, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.option(fc.constantFrom('x', 'y'), { nil: undefined }),
      )
      .map(([values, any, region]) =>
        compile(region ? [values.join(','), { region }] : values.join(','), {
          'x-filter-match-type': any ? 'any' : 'all',
        }),
      );
    const messageArb = fc.record({
      'x-stream-filter-value': fc.array(value, { maxLength: 3 }).map((v) => v.join(',')),
      region: fc.constantFrom('x', 'y'),
    });
    fc.assert(
      fc.property(
        fc.array(filterArb, { maxLength: 20 }),
        fc.array(messageArb),
        (filters, messages) => {
          const index = new ValueIndex<string>();
          const plain: string[] = [];
          for (const [i, f] of filters.entries())
            if (!index.insert(String(i), f)) plain.push(String(i));
          for (const headers of messages) {
            const naive = filters.flatMap((f, i) => (f.matches(headers) ? [String(i)] : [])).sort();
            const found = [
              ...matchesOf(index, headers),
              ...plain.filter((id) => filters[Number(id)]!.matches(headers)),
            ];
            expect(found.sort()).toEqual(naive);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
