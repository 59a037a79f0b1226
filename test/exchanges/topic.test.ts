import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TopicRouter, topicWords } from '../../src/exchanges/topic.js';

function routerWith(...keys: string[]): TopicRouter {
  const r = new TopicRouter();
  for (const key of keys) r.add(key, { destination: key, routingKey: key, args: {} });
  return r;
}

function route(r: TopicRouter, routingKey: string): string[] {
  const out = new Set<string>();
  r.route(routingKey, undefined, out);
  return [...out].sort();
}

/** A plain recursive matcher: the definition the trie must agree with. */
function reference(pattern: string[], words: string[]): boolean {
  if (pattern.length === 0) return words.length === 0;
  const [p, ...rest] = pattern;
  if (p === '#') {
    for (let i = 0; i <= words.length; i++) if (reference(rest, words.slice(i))) return true;
    return false;
  }
  if (words.length === 0) return false;
  return (p === '*' || p === words[0]) && reference(rest, words.slice(1));
}

describe('topic exchange matching', () => {
  it('splits keys into words like RabbitMQ: "" has none, empty words count', () => {
    expect(topicWords('')).toEqual([]);
    expect(topicWords('a')).toEqual(['a']);
    expect(topicWords('a.')).toEqual(['a', '']);
    expect(topicWords('.')).toEqual(['', '']);
    expect(topicWords('a..b')).toEqual(['a', '', 'b']);
  });

  it('matches literal keys exactly', () => {
    const r = routerWith('stock.usd.nyse');
    expect(route(r, 'stock.usd.nyse')).toEqual(['stock.usd.nyse']);
    expect(route(r, 'stock.usd')).toEqual([]);
    expect(route(r, 'stock.usd.nyse.x')).toEqual([]);
  });

  it('lets * match exactly one word, an empty word included', () => {
    const r = routerWith('*', 'a.*', '*.b');
    expect(route(r, 'x')).toEqual(['*']);
    expect(route(r, '')).toEqual([]);
    expect(route(r, 'a.b')).toEqual(['*.b', 'a.*']);
    expect(route(r, 'a.')).toEqual(['a.*']);
    expect(route(r, 'a')).toEqual(['*']);
    expect(route(r, 'a.b.c')).toEqual([]);
  });

  it('lets # alone match every key, the empty key included', () => {
    const r = routerWith('#');
    for (const key of ['', 'a', 'a.b.c', '.', 'a..b']) expect(route(r, key)).toEqual(['#']);
  });

  it('lets # match zero or more words inside a pattern', () => {
    const r = routerWith('a.#.b', 'a.#', '#.b');
    expect(route(r, 'a.b')).toEqual(['#.b', 'a.#', 'a.#.b']);
    expect(route(r, 'a.x.y.b')).toEqual(['#.b', 'a.#', 'a.#.b']);
    expect(route(r, 'a')).toEqual(['a.#']);
    expect(route(r, 'b')).toEqual(['#.b']);
    expect(route(r, 'x.a.b.y')).toEqual([]);
  });

  it('binds the empty key to the empty routing key only', () => {
    const r = routerWith('');
    expect(route(r, '')).toEqual(['']);
    expect(route(r, 'a')).toEqual([]);
  });

  it('treats * and # as wildcards only as whole words', () => {
    const r = routerWith('a*.b', 'a#');
    expect(route(r, 'a*.b')).toEqual(['a*.b']);
    expect(route(r, 'ax.b')).toEqual([]);
    expect(route(r, 'a#')).toEqual(['a#']);
    expect(route(r, 'a.b')).toEqual([]);
  });

  it('handles consecutive and repeated # without blowing up', () => {
    const r = routerWith('#.#.#.#.#.#.#.#.z');
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`);
    expect(route(r, [...words, 'z'].join('.'))).toEqual(['#.#.#.#.#.#.#.#.z']);
    expect(route(r, words.join('.'))).toEqual([]);
  });

  it('returns each destination once however many of its bindings match', () => {
    const r = new TopicRouter();
    r.add('1', { destination: 'q', routingKey: 'a.*', args: {} });
    r.add('2', { destination: 'q', routingKey: '#', args: {} });
    expect(route(r, 'a.b')).toEqual(['q']);
  });

  it('stops routing a pattern once its binding is removed, keeping the others', () => {
    const r = new TopicRouter();
    r.add('1', { destination: 'q1', routingKey: 'a.#', args: {} });
    r.add('2', { destination: 'q2', routingKey: 'a.#', args: {} });
    r.add('3', { destination: 'q1', routingKey: 'a.b', args: {} });
    r.remove('1', { destination: 'q1', routingKey: 'a.#', args: {} });
    expect(route(r, 'a.c')).toEqual(['q2']);
    expect(route(r, 'a.b')).toEqual(['q1', 'q2']);
    r.remove('2', { destination: 'q2', routingKey: 'a.#', args: {} });
    r.remove('3', { destination: 'q1', routingKey: 'a.b', args: {} });
    r.remove('3', { destination: 'q1', routingKey: 'a.b', args: {} });
    expect(route(r, 'a.b')).toEqual([]);
  });

  it('agrees with the definition of * and # on random patterns and keys', () => {
    const word = fc.constantFrom('a', 'b', '');
    const patternWord = fc.constantFrom('a', 'b', '', '*', '#');
    fc.assert(
      fc.property(
        fc.array(fc.array(patternWord, { maxLength: 5 }), { minLength: 1, maxLength: 6 }),
        fc.array(word, { maxLength: 6 }),
        (patterns, words) => {
          const r = new TopicRouter();
          const keys = patterns.map((p) => p.join('.'));
          keys.forEach((k, i) => {
            r.add(String(i), { destination: k, routingKey: k, args: {} });
          });
          const key = words.join('.');
          const expected = keys.filter((k) => reference(topicWords(k), topicWords(key)));
          expect(route(r, key)).toEqual([...new Set(expected)].sort());
        },
      ),
      { numRuns: 500 },
    );
  });
});
