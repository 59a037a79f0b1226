import { describe, expect, test } from 'vitest';
import { ContentTooLargeError, MqliteError, PreconditionFailedError } from '../../src/errors.js';
import {
  normalizeMessage,
  sharedProperties,
  unchangingProperties,
} from '../../src/message/normalize.js';
import { AmqpTimestamp } from '../../src/message/timestamp.js';
import type { MessageProperties } from '../../src/message/types.js';

describe('publishing a message', () => {
  test('a string body is stored as UTF-8 bytes', () => {
    const m = normalizeMessage('héllo', undefined, '', 'q');
    expect(new TextDecoder().decode(m.body)).toBe('héllo');
    expect(m.properties).toEqual({});
  });

  test('an object body is stored as JSON with a JSON content type', () => {
    const m = normalizeMessage({ a: 1 }, undefined, '', 'q');
    expect(new TextDecoder().decode(m.body)).toBe('{"a":1}');
    expect(m.properties.contentType).toBe('application/json');
  });

  test('a content type the publisher set is kept for a JSON body', () => {
    const m = normalizeMessage([1], { contentType: 'text/x-list' }, '', 'q');
    expect(m.properties.contentType).toBe('text/x-list');
  });

  test('null and undefined bodies are empty', () => {
    expect(normalizeMessage(null, undefined, '', 'q').body.byteLength).toBe(0);
    expect(normalizeMessage(undefined, undefined, '', 'q').body.byteLength).toBe(0);
  });

  test('mutating the buffer after publish changes nothing stored', () => {
    const body = new Uint8Array([1, 2, 3]);
    const headers = { nested: { n: 1 } };
    const m = normalizeMessage(body, { headers }, '', 'q');
    body[0] = 9;
    headers.nested.n = 2;
    expect([...m.body]).toEqual([1, 2, 3]);
    expect(m.properties.headers).toEqual({ nested: { n: 1 } });
  });

  test('bodies published one after another never overlap', () => {
    const a = normalizeMessage(new Uint8Array(100).fill(1), undefined, '', 'q');
    const b = normalizeMessage('two', undefined, '', 'q');
    const c = normalizeMessage(new Uint8Array(5000).fill(3), undefined, '', 'q');
    expect(a.body.every((x) => x === 1)).toBe(true);
    expect(new TextDecoder().decode(b.body)).toBe('two');
    expect(c.body.byteLength).toBe(5000);
    expect(c.body.every((x) => x === 3)).toBe(true);
  });

  test('many bodies fill and roll over the shared buffers intact', () => {
    const stored = Array.from({ length: 2000 }, (_, i) =>
      normalizeMessage(`message ${i} ${'x'.repeat(i % 300)}`, undefined, '', 'q'),
    );
    stored.forEach((m, i) => {
      expect(new TextDecoder().decode(m.body)).toBe(`message ${i} ${'x'.repeat(i % 300)}`);
    });
  });

  test('a typed array view is copied from its own window only', () => {
    const buffer = new Uint16Array([1, 2, 3, 4]);
    const m = normalizeMessage(buffer.subarray(1, 3), undefined, '', 'q');
    expect([...m.body]).toEqual([2, 0, 3, 0]);
  });

  test('publish-only options are not stored as properties', () => {
    const m = normalizeMessage('x', { confirm: true, mandatory: false } as never, '', 'q');
    expect(m.properties).toEqual({});
  });

  test('a numeric expiration is accepted as its string form', () => {
    const m = normalizeMessage('x', { expiration: 500 as never }, '', 'q');
    expect(m.properties.expiration).toBe('500');
  });

  test('a timestamp beyond a Date is an AmqpTimestamp, kept with its seconds; one within is a Date', () => {
    const wide = new AmqpTimestamp(2n ** 64n - 1n); // the 64 bits of -1 s, within a Date
    const far = new AmqpTimestamp(1n << 62n);
    const m = normalizeMessage('x', { timestamp: far, headers: { at: far, near: wide } }, '', 'q');
    expect((m.properties.timestamp as AmqpTimestamp).seconds).toBe(1n << 62n);
    expect(m.properties.timestamp).not.toBe(far);
    expect((m.properties.headers!.at as AmqpTimestamp).seconds).toBe(1n << 62n);
    expect(m.properties.headers!.near).toEqual(new Date(-1000));
    expect(m.properties.headers!.near).not.toBeInstanceOf(AmqpTimestamp);
    expect(() => new AmqpTimestamp(2n ** 64n)).toThrow(RangeError);
  });

  test.each([
    [{ priority: 256 }, 'invalid priority 256'],
    [{ priority: 1.5 }, 'invalid priority 1.5'],
    [{ expiration: '-1' }, "invalid expiration '-1'"],
    [{ expiration: 'soon' }, "invalid expiration 'soon'"],
    [{ deliveryMode: 3 }, 'invalid deliveryMode 3'],
    [{ messageId: 5 }, 'invalid messageId'],
    [{ timestamp: 5 }, 'invalid timestamp'],
    [{ timestamp: new Date(Number.NaN) }, 'invalid timestamp'],
    [{ headers: { at: new Date(Number.NaN) } }, 'invalid headers.at: invalid Date'],
    [{ colour: 'red' }, "unknown message property 'colour'"],
    [{ headers: { f: () => 1 } }, 'invalid headers.f: a function cannot be stored'],
    [{ headers: { s: Symbol('x') } }, 'invalid headers.s: a symbol cannot be stored'],
    [{ headers: { m: new Map() } }, 'invalid headers.m: a Map cannot be stored'],
    [{ headers: [1, 2] }, 'invalid headers: must be a table'],
    [{ appId: 'x'.repeat(256) }, 'appId is longer than 255 bytes'],
  ])('invalid properties %j are refused with 406', (props, message) => {
    const attempt = () => normalizeMessage('x', props as never, '', 'q');
    expect(attempt).toThrow(PreconditionFailedError);
    expect(attempt).toThrow(message);
    try {
      attempt();
    } catch (error) {
      expect(error).toBeInstanceOf(MqliteError);
      expect((error as MqliteError).replyCode).toBe(406);
      expect((error as MqliteError).code).toBe('MQLITE_PRECONDITION_FAILED');
    }
  });

  test('headers nested deeper than the limit are refused', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expect(() => normalizeMessage('x', { headers: deep as never }, '', 'q')).toThrow(
      /nested deeper than 32 levels/,
    );
  });

  const limits = { maxMessageBytes: 100, maxHeaderBytes: 60, maxHeaderDepth: 32 };

  test('a message over the limit is refused with 311, its headers counted with its body', () => {
    const attempt = (body: Uint8Array, headers?: Record<string, string>) => () =>
      normalizeMessage(body, headers && { headers }, '', 'q', limits);
    expect(attempt(new Uint8Array(101))).toThrow(
      new ContentTooLargeError('message size 101 is larger than max size 100'),
    );
    expect(attempt(new Uint8Array(100))).not.toThrow();
    // 'h' takes 1 + 2 bytes of name and tag, 'v' 1: the same body with it is 4 bytes over.
    expect(attempt(new Uint8Array(100), { h: 'v' })).toThrow(
      new ContentTooLargeError('message size 104 is larger than max size 100'),
    );
  });

  test('headers over their limit are refused with 311 after at most the limit of work', () => {
    const huge = new Proxy({} as Record<string, string>, {
      ownKeys: () => Array.from({ length: 10_000 }, (_, i) => `h${i}`),
      getOwnPropertyDescriptor: () => ({ enumerable: true, configurable: true }),
    });
    let reads = 0;
    const counted = new Proxy(huge, {
      get: () => {
        reads++;
        return 'value';
      },
    });
    expect(() => normalizeMessage('', { headers: counted }, '', 'q', limits)).toThrow(
      new ContentTooLargeError('message headers are larger than max size 60'),
    );
    expect(reads).toBeLessThan(10);
    const nested = { a: { b: ['x'.repeat(30), 'y'.repeat(30)] } };
    expect(() => normalizeMessage('', { headers: nested }, '', 'q', limits)).toThrow(
      ContentTooLargeError,
    );
  });

  test('a body JSON cannot carry as it is, is a TypeError', () => {
    class Point {
      x = 1;
    }
    const refused: [unknown, string][] = [
      [() => 1, 'function'],
      [Symbol('s'), 'symbol'],
      [10n, 'bigint'],
      [new Map([['a', 1]]), 'Map'],
      [new Set([1]), 'Set'],
      [new WeakMap(), 'WeakMap'],
      [new Point(), 'Point'],
      [Promise.resolve(1), 'Promise'],
    ];
    for (const [body, what] of refused) {
      expect(() => normalizeMessage(body as never, undefined, '', 'q')).toThrow(
        new TypeError(
          `a ${what} cannot be published as a body: pass bytes, a string, or a JSON value`,
        ),
      );
    }
    // Plain JSON values, and objects that say how they render, are JSON bodies.
    for (const body of [0, false, [1, { a: 2 }], Object.create(null), new Date(0), { a: 1 }]) {
      expect(normalizeMessage(body as never, undefined, '', 'q').properties.contentType).toBe(
        'application/json',
      );
    }
  });

  test('header values of every field type survive', () => {
    const when = new Date(1_700_000_000_000);
    const m = normalizeMessage(
      '',
      {
        headers: {
          s: 's',
          i: 42,
          f: 1.5,
          b: true,
          big: 10n,
          n: null,
          d: when,
          bytes: new Uint8Array([7]),
          list: [1, 'a', [2]],
          table: { x: { y: 'z' } },
        },
      },
      '',
      'q',
    );
    expect(m.properties.headers).toEqual({
      s: 's',
      i: 42,
      f: 1.5,
      b: true,
      big: 10n,
      n: null,
      d: when,
      bytes: new Uint8Array([7]),
      list: [1, 'a', [2]],
      table: { x: { y: 'z' } },
    });
  });

  test('messages that carry only a priority share one frozen properties object per priority', () => {
    const a = normalizeMessage('a', { priority: 3 }, '', 'q');
    const b = normalizeMessage('b', { priority: 3, confirm: true } as never, '', 'q');
    expect(a.properties).toEqual({ priority: 3 });
    expect(b.properties).toBe(a.properties);
    expect(Object.isFrozen(a.properties)).toBe(true);
    expect(normalizeMessage('c', { priority: 4 }, '', 'q').properties).toEqual({ priority: 4 });
    // Anything beside the priority keeps a properties object of its own.
    const c = normalizeMessage('c', { priority: 3, messageId: 'x' }, '', 'q');
    expect(c.properties).toEqual({ priority: 3, messageId: 'x' });
    expect(normalizeMessage({ n: 1 }, { priority: 3 }, '', 'q').properties).toEqual({
      priority: 3,
      contentType: 'application/json',
    });
    // A priority that is inherited, not a number or out of range is no shortcut.
    const inherited = Object.create({ priority: 3 }) as MessageProperties;
    expect(normalizeMessage('d', inherited, '', 'q').properties).toEqual({});
    expect(() => normalizeMessage('e', { priority: '3' } as never, '', 'q')).toThrow(/priority/);
    expect(() => normalizeMessage('f', { priority: 256 }, '', 'q')).toThrow(/priority 256/);
  });

  test('sharedProperties swaps a priority-only copy for the shared object and keeps the rest', () => {
    const shared = normalizeMessage('a', { priority: 7 }, '', 'q').properties;
    expect(sharedProperties({ priority: 7 })).toBe(shared);
    expect(sharedProperties(shared)).toBe(shared);
    const other = { priority: 7, type: 't' };
    expect(sharedProperties(other)).toBe(other);
    const none = { type: 't' };
    expect(sharedProperties(none)).toBe(none);
  });
});

describe('properties their owner never changes', () => {
  test('normalize once: messages published with them share one properties object', () => {
    const fixed = unchangingProperties({ contentType: 'text/plain', headers: { tenant: 'a' } });
    const first = normalizeMessage('1', fixed, '', 'q');
    const second = normalizeMessage('2', fixed, '', 'q');
    expect(second.properties).toBe(first.properties);
    expect(second.properties).toEqual({ contentType: 'text/plain', headers: { tenant: 'a' } });
    // A JSON body adds its content type: not the same normalized properties.
    expect(normalizeMessage({ n: 1 }, fixed, '', 'q').properties).not.toBe(first.properties);
  });

  test('others are normalized on every publish, their changes kept', () => {
    const options: MessageProperties = { headers: { n: 1 } };
    const first = normalizeMessage('1', options, '', 'q');
    options.headers!.n = 2;
    const second = normalizeMessage('2', options, '', 'q');
    expect(first.properties.headers).toEqual({ n: 1 });
    expect(second.properties.headers).toEqual({ n: 2 });
  });
});
