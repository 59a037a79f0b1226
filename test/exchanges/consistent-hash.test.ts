import { describe, expect, it } from 'vitest';
import { PreconditionFailedError } from '../../src/errors.js';
import { Exchanges } from '../../src/exchanges/index.js';
import type { FieldTable, MessageProperties } from '../../src/message/types.js';

const QUEUES: [string, string][] = [
  ['hash-dedup-q-a', '10'],
  ['hash-dedup-q-b', '20'],
  ['hash-dedup-q-c', '5'],
];

function hashExchange(args: FieldTable = {}, bindings = QUEUES): Exchanges {
  const ex = new Exchanges();
  ex.declare('x', 'x-consistent-hash', { arguments: args });
  for (const [queue, weight] of bindings) ex.bind('x', queue, weight);
  return ex;
}

/** The last letter of the queue each key reaches, as `index:letter`. */
function assignment(ex: Exchanges, keys: string[], route = (k: string) => ex.route('x', k)) {
  return keys.map((k, i) => `${i}:${[...route(k)].map((q) => q.slice(-1)).join('')}`).join(' ');
}

const keys = Array.from({ length: 30 }, (_, i) => `key${i}`);

// Observed on LavinMQ 2.9.1 with the same queue names, weights and keys.
const LAVINMQ_RING =
  '0:a 1:b 2:b 3:b 4:a 5:b 6:b 7:b 8:a 9:b 10:b 11:b 12:a 13:a 14:b 15:b 16:a 17:a 18:b 19:b 20:b 21:b 22:a 23:b 24:b 25:b 26:a 27:b 28:b 29:b';
const LAVINMQ_JUMP =
  '0:c 1:a 2:a 3:a 4:a 5:a 6:b 7:b 8:b 9:b 10:b 11:b 12:c 13:a 14:c 15:c 16:b 17:a 18:b 19:a 20:b 21:c 22:a 23:b 24:b 25:c 26:b 27:b 28:a 29:b';

describe('consistent-hash exchange', () => {
  it('sends each routing key to the queue LavinMQ 2.9.1 sends it to (ring, the default)', () => {
    expect(assignment(hashExchange(), keys)).toBe(LAVINMQ_RING);
    expect(assignment(hashExchange({ 'x-algorithm': 'ring' }), keys)).toBe(LAVINMQ_RING);
  });

  it('with x-algorithm jump, sends each key where LavinMQ 2.9.1 jump-hashes it', () => {
    expect(assignment(hashExchange({ 'x-algorithm': 'jump' }), keys)).toBe(LAVINMQ_JUMP);
    expect(assignment(hashExchange({ 'x-algorithm': 'JUMP' }), keys)).toBe(LAVINMQ_JUMP);
  });

  it('ignores an unknown x-algorithm, as LavinMQ does', () => {
    expect(assignment(hashExchange({ 'x-algorithm': 'modulo' }), keys)).toBe(LAVINMQ_RING);
  });

  it('routes every message to exactly one queue, the same one for the same key', () => {
    const ex = hashExchange();
    for (const key of keys) {
      const first = [...ex.route('x', key)];
      expect(first).toHaveLength(1);
      expect([...ex.route('x', key)]).toEqual(first);
    }
  });

  it('shares keys by weight', () => {
    const ex = hashExchange({}, [
      ['light', '10'],
      ['heavy', '30'],
    ]);
    const counts: Record<string, number> = { light: 0, heavy: 0 };
    for (let i = 0; i < 4000; i++) for (const q of ex.route('x', `k${i}`)) counts[q]!++;
    expect(counts.heavy! / 4000).toBeGreaterThan(0.6);
    expect(counts.heavy! / 4000).toBeLessThan(0.9);
  });

  it('moves only the keys of a queue that is unbound', () => {
    const ex = hashExchange();
    const before = keys.map((k) => [...ex.route('x', k)][0]);
    ex.unbind('x', 'hash-dedup-q-c', '5');
    keys.forEach((k, i) => {
      if (before[i] !== 'hash-dedup-q-c') expect([...ex.route('x', k)][0]).toBe(before[i]);
      else expect([...ex.route('x', k)][0]).not.toBe('hash-dedup-q-c');
    });
  });

  it('keeps a queue bound twice with the same weight in place until both bindings go', () => {
    const ex = hashExchange({}, [['only', '3']]);
    ex.bind('x', 'only', '3', { other: 1 });
    ex.unbind('x', 'only', '3');
    expect([...ex.route('x', 'k')]).toEqual(['only']);
    ex.unbind('x', 'only', '3', { other: 1 });
    expect(ex.route('x', 'k').size).toBe(0);
  });

  it('routes nowhere without bindings', () => {
    expect(hashExchange({}, []).route('x', 'k').size).toBe(0);
  });

  it('reaches a bound exchange, placed by its name', () => {
    const ex = hashExchange({}, []);
    ex.declare('inner', 'fanout');
    ex.bind('inner', 'q', '');
    ex.bindExchange('inner', 'x', '1');
    expect([...ex.route('x', 'any')]).toEqual(['q']);
  });

  describe('hashing a header or property', () => {
    const route = (ex: Exchanges, headers?: FieldTable, properties?: MessageProperties) =>
      [...ex.route('x', 'ignored', headers, properties)][0];

    it('x-hash-on hashes the header value instead of the routing key (a missing one as "")', () => {
      const ex = hashExchange({ 'x-hash-on': 'user' });
      const plain = hashExchange();
      for (const key of keys) {
        expect(route(ex, { user: key })).toBe([...plain.route('x', key)][0]);
      }
      expect(route(ex, {})).toBe([...plain.route('x', '')][0]);
      expect(route(ex, undefined)).toBe([...plain.route('x', '')][0]);
    });

    it('x-hash-on refuses a header that is not a string, as LavinMQ does', () => {
      const ex = hashExchange({ 'x-hash-on': 'user' });
      expect(() => route(ex, { user: 5 })).toThrow(
        new PreconditionFailedError('Routing header must be string'),
      );
    });

    it('hash-header hashes the header value, any value, as RabbitMQ routes them', () => {
      const ex = hashExchange({ 'hash-header': 'user' });
      const plain = hashExchange();
      expect(route(ex, { user: 'key3' })).toBe([...plain.route('x', 'key3')][0]);
      expect(route(ex, { user: 7 })).toBe([...plain.route('x', '7')][0]);
    });

    it('hash-property hashes message_id, correlation_id or timestamp (in seconds)', () => {
      const plain = hashExchange();
      const byId = hashExchange({ 'hash-property': 'message_id' });
      const byCorrelation = hashExchange({ 'hash-property': 'correlation_id' });
      const byTime = hashExchange({ 'hash-property': 'timestamp' });
      for (const key of keys) {
        const expected = [...plain.route('x', key)][0];
        expect(route(byId, {}, { messageId: key })).toBe(expected);
        expect(route(byCorrelation, undefined, { correlationId: key })).toBe(expected);
      }
      expect(route(byTime, {}, { timestamp: new Date(1_700_000_000_500) })).toBe(
        [...plain.route('x', '1700000000')][0],
      );
      expect(route(byId, {}, {})).toBe([...plain.route('x', '')][0]);
    });
  });

  describe('invalid arguments', () => {
    const declare = (args: FieldTable) =>
      new Exchanges().declare('x', 'x-consistent-hash', { arguments: args });

    it('refuses hash-header with hash-property, as RabbitMQ words it', () => {
      expect(() => declare({ 'hash-header': 'h', 'hash-property': 'message_id' })).toThrow(
        new PreconditionFailedError('hash-header and hash-property are mutually exclusive'),
      );
    });

    it('refuses an unsupported hash-property, and a hash-header that is not a string', () => {
      expect(() => declare({ 'hash-property': 'foo' })).toThrow(
        new PreconditionFailedError('Unsupported property: foo'),
      );
      expect(() => declare({ 'hash-property': 'constructor' })).toThrow(PreconditionFailedError);
      expect(() => declare({ 'hash-header': 5 })).toThrow(PreconditionFailedError);
    });

    it('refuses a binding key that is not a positive integer, as RabbitMQ words it', () => {
      const ex = hashExchange({}, []);
      expect(() => ex.bind('x', 'q', 'abc')).toThrow(
        new PreconditionFailedError('The binding key must be an integer: <<"abc">>'),
      );
      expect(() => ex.bind('x', 'q', ' 2')).toThrow(
        new PreconditionFailedError('The binding key must be an integer: <<" 2">>'),
      );
      expect(() => ex.bind('x', 'q', '0')).toThrow(
        new PreconditionFailedError('The binding key must be greater than 0'),
      );
      expect(() => ex.bind('x', 'q', '-1')).toThrow(
        new PreconditionFailedError('The binding key must be greater than 0'),
      );
      expect(() => ex.bind('x', 'q', '99999999999')).toThrow(PreconditionFailedError);
      expect(ex.bindings('x')).toEqual([]);
      expect(ex.bind('x', 'q', '+2')).toBe(true);
    });

    it('keeps an argument named like an Object prototype key to itself', () => {
      const ex = hashExchange({ 'x-hash-on': 'toString' });
      expect(() => ex.route('x', 'k', {})).not.toThrow();
    });
  });

  it('survives a snapshot and restore with the same assignment', () => {
    const ex = hashExchange({ 'x-algorithm': 'jump' });
    const restored = Exchanges.fromJSON(ex.toJSON());
    expect(restored.get('x')?.type).toBe('x-consistent-hash');
    expect(assignment(restored, keys)).toBe(LAVINMQ_JUMP);
  });
});
