import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../src/errors.js';
import { HeadersRouter } from '../../src/exchanges/headers.js';
import type { FieldTable } from '../../src/message/types.js';

/** One destination per binding, named after it; returns what a message with `headers` reaches. */
function routes(bindings: Record<string, FieldTable>, headers: FieldTable | undefined): string[] {
  const r = new HeadersRouter();
  for (const [name, args] of Object.entries(bindings)) {
    r.add(name, { destination: name, routingKey: '', args });
  }
  const out = new Set<string>();
  r.route('ignored', headers, out);
  return [...out].sort();
}

// The expectations below were observed on RabbitMQ 3.10 (see test/parity/scenarios/exchanges.ts).
describe('headers exchange matching', () => {
  const bindings: Record<string, FieldTable> = {
    allEmpty: {},
    anyEmpty: { 'x-match': 'any' },
    allA1: { a: 1 },
    anyA1B2: { 'x-match': 'any', a: 1, b: 2 },
    allXfoo: { 'x-match': 'all', 'x-foo': 'y', a: 1 },
    allWithX: { 'x-match': 'all-with-x', 'x-foo': 'y', a: 1 },
    anyWithX: { 'x-match': 'any-with-x', 'x-foo': 'y' },
    allStr1: { a: '1' },
    presenceA: { a: null },
    allBool: { t: true },
  };

  it('x-match all (the default) with no pattern matches every message; any matches none', () => {
    expect(routes(bindings, undefined)).toEqual(['allEmpty']);
    expect(routes(bindings, {})).toEqual(['allEmpty']);
  });

  it('compares numbers by value and never equals a number to a string', () => {
    expect(routes(bindings, { a: 1 })).toEqual([
      'allA1',
      'allEmpty',
      'allXfoo',
      'anyA1B2',
      'presenceA',
    ]);
    expect(routes(bindings, { a: 1n })).toEqual([
      'allA1',
      'allEmpty',
      'allXfoo',
      'anyA1B2',
      'presenceA',
    ]);
    expect(routes(bindings, { a: '1' })).toEqual(['allEmpty', 'allStr1', 'presenceA']);
  });

  it('any needs one entry to match; all needs every entry', () => {
    expect(routes(bindings, { b: 2 })).toEqual(['allEmpty', 'anyA1B2']);
    expect(routes({ both: { a: 1, b: 2 } }, { a: 1 })).toEqual([]);
    expect(routes({ both: { a: 1, b: 2 } }, { a: 1, b: 2, c: 3 })).toEqual(['both']);
  });

  it('ignores x- entries of the pattern unless the mode ends in -with-x', () => {
    expect(routes(bindings, { 'x-foo': 'y' })).toEqual(['allEmpty', 'anyWithX']);
    expect(routes(bindings, { 'x-foo': 'y', a: 1 })).toEqual([
      'allA1',
      'allEmpty',
      'allWithX',
      'allXfoo',
      'anyA1B2',
      'anyWithX',
      'presenceA',
    ]);
  });

  it('treats a void (null) pattern value as "present with any value"', () => {
    expect(routes(bindings, { a: null })).toEqual(['allEmpty', 'presenceA']);
    expect(routes({ p: { a: null } }, { b: 1 })).toEqual([]);
  });

  it('compares booleans only with booleans', () => {
    expect(routes(bindings, { t: true })).toEqual(['allBool', 'allEmpty']);
    expect(routes(bindings, { t: 1 })).toEqual(['allEmpty']);
  });

  it('compares strings with byte arrays by bytes, and nested values structurally', () => {
    expect(routes({ s: { a: 'hé' } }, { a: new TextEncoder().encode('hé') })).toEqual(['s']);
    expect(routes({ arr: { a: [1, 'x'] } }, { a: [1, 'x'] })).toEqual(['arr']);
    expect(routes({ arr: { a: [1, 'x'] } }, { a: [1] })).toEqual([]);
    expect(routes({ t: { a: { k: 1, j: 2 } } }, { a: { j: 2, k: 1 } })).toEqual(['t']);
  });

  it('refuses an unknown x-match with 406', () => {
    const r = new HeadersRouter();
    expect(() =>
      r.add('b', { destination: 'q', routingKey: '', args: { 'x-match': 'some' } }),
    ).toThrow(PreconditionFailedError);
    expect(() => r.add('b', { destination: 'q', routingKey: '', args: { 'x-match': 1 } })).toThrow(
      "PRECONDITION_FAILED - Invalid x-match field value '1'; expected all, any, all-with-x, or any-with-x",
    );
  });

  it('forgets a removed binding', () => {
    const r = new HeadersRouter();
    r.add('b', { destination: 'q', routingKey: '', args: {} });
    r.remove('b');
    const out = new Set<string>();
    r.route('', {}, out);
    expect(out.size).toBe(0);
  });
});
