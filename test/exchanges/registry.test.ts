import { describe, expect, it } from 'vitest';
import { AccessRefusedError, NotFoundError, PreconditionFailedError } from '../../src/errors.js';
import { Exchanges } from '../../src/exchanges/registry.js';

const sorted = (s: Set<string>) => [...s].sort();

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error');
}

describe('Exchanges: declaring', () => {
  it('starts with the default exchange and the amq.* exchanges', () => {
    const ex = new Exchanges();
    expect(
      ex
        .list()
        .map((e) => `${e.name}:${e.type}`)
        .sort(),
    ).toEqual([
      ':direct',
      'amq.direct:direct',
      'amq.fanout:fanout',
      'amq.headers:headers',
      'amq.match:headers',
      'amq.topic:topic',
    ]);
  });

  it('declares with RabbitMQ defaults and returns the same exchange on an identical redeclare', () => {
    const ex = new Exchanges();
    const first = ex.declare('logs', 'fanout');
    expect(first).toMatchObject({
      name: 'logs',
      type: 'fanout',
      durable: true,
      autoDelete: false,
      internal: false,
    });
    expect(ex.declare('logs', 'fanout', { durable: true })).toEqual(first);
    expect(ex.declare('amq.direct', 'direct').name).toBe('amq.direct');
  });

  it.each([
    [
      { type: 'topic' },
      "inequivalent arg 'type' for exchange 'logs' in vhost '/': received 'topic' but current is 'fanout'",
    ],
    [
      { durable: false },
      "inequivalent arg 'durable' for exchange 'logs' in vhost '/': received 'false' but current is 'true'",
    ],
    [
      { autoDelete: true },
      "inequivalent arg 'auto_delete' for exchange 'logs' in vhost '/': received 'true' but current is 'false'",
    ],
    [
      { internal: true },
      "inequivalent arg 'internal' for exchange 'logs' in vhost '/': received 'true' but current is 'false'",
    ],
    [
      { arguments: { 'alternate-exchange': 'x' } },
      "inequivalent arg 'alternate-exchange' for exchange 'logs' in vhost '/': received the value 'x' of type 'longstr' but current is none",
    ],
  ])('refuses an inequivalent redeclare %o with 406 as RabbitMQ words it', (change, message) => {
    const ex = new Exchanges();
    ex.declare('logs', 'fanout');
    const { type = 'fanout', ...options } = change as { type?: string };
    expect(() => ex.declare('logs', type, options)).toThrow(PreconditionFailedError);
    expect(() => ex.declare('logs', type, options)).toThrow(`PRECONDITION_FAILED - ${message}`);
    expect(ex.get('logs')).toMatchObject({ type: 'fanout', durable: true, arguments: {} });
  });

  it('compares only alternate-exchange among the arguments, as RabbitMQ does', () => {
    const ex = new Exchanges();
    ex.declare('logs', 'fanout', { arguments: { 'alternate-exchange': 'ae', other: 1 } });
    expect(
      ex.declare('logs', 'fanout', { arguments: { 'alternate-exchange': 'ae', other: 2 } })
        .arguments,
    ).toEqual({
      'alternate-exchange': 'ae',
      other: 1,
    });
    expect(() => ex.declare('logs', 'fanout')).toThrow(
      "received none but current is the value 'ae' of type 'longstr'",
    );
  });

  it('names the vhost in messages', () => {
    const ex = new Exchanges({ vhost: 'prod' });
    expect(() => ex.declare('x', 'direct', { passive: true })).toThrow(
      "NOT_FOUND - no exchange 'x' in vhost 'prod'",
    );
  });

  it('checks only existence on a passive declare', () => {
    const ex = new Exchanges();
    expect(() => ex.declare('missing', 'direct', { passive: true })).toThrow(NotFoundError);
    ex.declare('logs', 'fanout');
    expect(ex.declare('logs', 'topic', { passive: true, durable: false }).type).toBe('fanout');
    expect(ex.has('missing')).toBe(false);
  });

  it('refuses an unknown exchange type with 406, as RabbitMQ 4.x, before the name is checked', () => {
    const ex = new Exchanges();
    const err = catchError(() => ex.declare('x', 'x-no-such-type'));
    expect(err).toBeInstanceOf(PreconditionFailedError);
    expect(err).toMatchObject({
      code: 'MQLITE_PRECONDITION_FAILED',
      replyCode: 406,
      message: "PRECONDITION_FAILED - unknown exchange type 'x-no-such-type'",
    });
    expect(ex.has('x')).toBe(false);
    expect(() => ex.declare('', 'x-no-such-type')).toThrow(/unknown exchange type/);
    expect(() => ex.declare('', 'x-no-such-type', { passive: true })).toThrow(AccessRefusedError);
  });

  it('reserves the default exchange and new amq.* names (403)', () => {
    const ex = new Exchanges();
    expect(() => ex.declare('', 'direct')).toThrow(
      'ACCESS_REFUSED - operation not permitted on the default exchange',
    );
    expect(() => ex.declare('amq.custom', 'direct')).toThrow(
      "ACCESS_REFUSED - exchange name 'amq.custom' contains reserved prefix 'amq.*'",
    );
    expect(() => ex.declare('amq.direct', 'direct', { durable: false })).toThrow(
      PreconditionFailedError,
    );
  });

  it('refuses an alternate-exchange that is not a string (406)', () => {
    const ex = new Exchanges();
    expect(() => ex.declare('x', 'direct', { arguments: { 'alternate-exchange': 123 } })).toThrow(
      "PRECONDITION_FAILED - invalid type 'signedint' for arg 'alternate-exchange' in exchange 'x' in vhost '/'",
    );
  });

  it('treats wrong-typed options as programmer errors', () => {
    const ex = new Exchanges();
    expect(() => ex.declare(1 as unknown as string, 'direct')).toThrow(TypeError);
    expect(() => ex.declare('x', 'direct', { durable: 'yes' as unknown as boolean })).toThrow(
      TypeError,
    );
    expect(() => ex.declare('x'.repeat(256), 'direct')).toThrow(RangeError);
    expect(() => ex.declare('x', 'direct', { arguments: { f: (() => 1) as never } })).toThrow(
      TypeError,
    );
    expect(ex.has('x')).toBe(false);
  });

  it('keeps its own copy of the arguments', () => {
    const ex = new Exchanges();
    const args = { 'alternate-exchange': 'ae' };
    ex.declare('x', 'direct', { arguments: args });
    args['alternate-exchange'] = 'other';
    expect(ex.get('x')?.arguments).toEqual({ 'alternate-exchange': 'ae' });
  });
});

describe('Exchanges: deleting', () => {
  it('deletes an exchange with its bindings; a missing one is not an error', () => {
    const ex = new Exchanges();
    ex.declare('logs', 'fanout');
    ex.bind('logs', 'q');
    expect(ex.delete('logs')).toBe(true);
    expect(ex.has('logs')).toBe(false);
    expect(ex.bindingsTo('q')).toEqual([]);
    expect(ex.delete('logs')).toBe(false);
  });

  it('refuses ifUnused while bound (406) and system exchanges (403)', () => {
    const ex = new Exchanges();
    ex.declare('logs', 'fanout');
    ex.bind('logs', 'q');
    expect(() => ex.delete('logs', { ifUnused: true })).toThrow(
      "PRECONDITION_FAILED - exchange 'logs' in vhost '/' in use",
    );
    expect(() => ex.delete('')).toThrow(AccessRefusedError);
    expect(() => ex.delete('amq.topic')).toThrow(
      "ACCESS_REFUSED - deletion of system exchange 'amq.topic' in vhost '/' not allowed",
    );
    ex.unbind('logs', 'q');
    expect(ex.delete('logs', { ifUnused: true })).toBe(true);
  });

  it('refuses deleting any amq. name (403), a missing one too, whatever ifUnused', () => {
    const ex = new Exchanges();
    for (const name of ['amq.direct', 'amq.nothing-here', 'amq.default']) {
      for (const ifUnused of [false, true]) {
        expect(() => ex.delete(name, { ifUnused })).toThrow(
          `ACCESS_REFUSED - deletion of system exchange '${name}' in vhost '/' not allowed`,
        );
      }
    }
    expect(ex.has('amq.direct')).toBe(true);
  });
});

describe('Exchanges: binding and routing', () => {
  it('routes the default exchange by queue name, to existing destinations only', () => {
    const queues = new Set(['jobs']);
    const ex = new Exchanges({ hasDestination: (q) => queues.has(q) });
    expect(sorted(ex.route('', 'jobs'))).toEqual(['jobs']);
    expect(sorted(ex.route('', 'nope'))).toEqual([]);
  });

  it('refuses binding to the default exchange (403) and to a missing one (404)', () => {
    const ex = new Exchanges();
    expect(() => ex.bind('', 'q', 'q')).toThrow(
      'ACCESS_REFUSED - operation not permitted on the default exchange',
    );
    expect(() => ex.unbind('', 'q', 'q')).toThrow(AccessRefusedError);
    expect(() => ex.bind('missing', 'q')).toThrow("NOT_FOUND - no exchange 'missing' in vhost '/'");
  });

  it('routes direct exchanges by exact key, each destination once', () => {
    const ex = new Exchanges();
    ex.bind('amq.direct', 'q1', 'info');
    ex.bind('amq.direct', 'q2', 'info');
    ex.bind('amq.direct', 'q2', 'error');
    ex.bind('amq.direct', 'q2', 'info', { note: 1 });
    expect(sorted(ex.route('amq.direct', 'info'))).toEqual(['q1', 'q2']);
    expect(sorted(ex.route('amq.direct', 'error'))).toEqual(['q2']);
    expect(sorted(ex.route('amq.direct', 'debug'))).toEqual([]);
    ex.unbind('amq.direct', 'q2', 'info');
    expect(sorted(ex.route('amq.direct', 'info'))).toEqual(['q1', 'q2']);
    ex.unbind('amq.direct', 'q2', 'info', { note: 1 });
    expect(sorted(ex.route('amq.direct', 'info'))).toEqual(['q1']);
  });

  it('routes fanout exchanges to every bound destination', () => {
    const ex = new Exchanges();
    ex.bind('amq.fanout', 'q1', 'a');
    ex.bind('amq.fanout', 'q2');
    expect(sorted(ex.route('amq.fanout', 'anything'))).toEqual(['q1', 'q2']);
  });

  it('routes topic and headers exchanges', () => {
    const ex = new Exchanges();
    ex.bind('amq.topic', 'eu', '*.eu.#');
    ex.bind('amq.match', 'red', '', { color: 'red' });
    expect(sorted(ex.route('amq.topic', 'stock.eu.de.x'))).toEqual(['eu']);
    expect(sorted(ex.route('amq.match', '', { color: 'red' }))).toEqual(['red']);
    expect(sorted(ex.route('amq.match', ''))).toEqual([]);
  });

  it('treats binding twice as one binding, and unbinding a missing binding as a no-op', () => {
    const ex = new Exchanges();
    expect(ex.bind('amq.direct', 'q', 'k', { b: 1, a: 2 })).toBe(true);
    expect(ex.bind('amq.direct', 'q', 'k', { a: 2, b: 1 })).toBe(false);
    expect(ex.bindings('amq.direct')).toHaveLength(1);
    expect(ex.unbind('amq.direct', 'q', 'other')).toBe(false);
    expect(ex.unbind('amq.direct', 'q', 'k', { a: 2, b: 1 })).toBe(true);
    expect(ex.bindings('amq.direct')).toHaveLength(0);
  });

  it('refuses an invalid headers binding and stores nothing', () => {
    const ex = new Exchanges();
    expect(() => ex.bind('amq.headers', 'q', '', { 'x-match': 'most' })).toThrow(
      PreconditionFailedError,
    );
    expect(ex.bindings('amq.headers')).toEqual([]);
    expect(ex.bindingsTo('q')).toEqual([]);
  });

  it('follows alternate-exchange when nothing matched, along a chain', () => {
    const ex = new Exchanges();
    ex.declare('ae2', 'fanout');
    ex.declare('ae1', 'direct', { arguments: { 'alternate-exchange': 'ae2' } });
    ex.declare('main', 'direct', { arguments: { 'alternate-exchange': 'ae1' } });
    ex.bind('main', 'routed', 'k');
    ex.bind('ae1', 'ae1-q', 'k2');
    ex.bind('ae2', 'unrouted');
    expect(sorted(ex.route('main', 'k'))).toEqual(['routed']);
    expect(sorted(ex.route('main', 'k2'))).toEqual(['ae1-q']);
    expect(sorted(ex.route('main', 'other'))).toEqual(['unrouted']);
  });

  it('stops at a missing alternate exchange and at alternate-exchange cycles', () => {
    const ex = new Exchanges();
    ex.declare('a', 'direct', { arguments: { 'alternate-exchange': 'b' } });
    ex.declare('b', 'direct', { arguments: { 'alternate-exchange': 'a' } });
    ex.declare('self', 'direct', { arguments: { 'alternate-exchange': 'self' } });
    ex.declare('dangling', 'direct', { arguments: { 'alternate-exchange': 'gone' } });
    expect(sorted(ex.route('a', 'k'))).toEqual([]);
    expect(sorted(ex.route('self', 'k'))).toEqual([]);
    expect(sorted(ex.route('dangling', 'k'))).toEqual([]);
    ex.bind('b', 'bq', 'k');
    expect(sorted(ex.route('a', 'k'))).toEqual(['bq']);
  });

  it('routes a missing exchange nowhere, and checkPublish reports it (404) or internal (403)', () => {
    const ex = new Exchanges();
    expect(ex.route('missing', 'k').size).toBe(0);
    expect(() => ex.checkPublish('missing')).toThrow(NotFoundError);
    ex.declare('hidden', 'fanout', { internal: true });
    expect(() => ex.checkPublish('hidden')).toThrow(
      "ACCESS_REFUSED - cannot publish to internal exchange 'hidden' in vhost '/'",
    );
    expect(() => ex.checkPublish('')).not.toThrow();
  });

  it('deletes an auto-delete exchange when its last binding goes, not before', () => {
    const ex = new Exchanges();
    ex.declare('tmp', 'direct', { autoDelete: true });
    ex.bind('tmp', 'q1', 'a');
    ex.bind('tmp', 'q2', 'a');
    ex.unbind('tmp', 'q1', 'a');
    expect(ex.has('tmp')).toBe(true);
    ex.unbind('tmp', 'q2', 'a');
    expect(ex.has('tmp')).toBe(false);
  });

  it('removes every binding of a deleted destination', () => {
    const ex = new Exchanges();
    ex.declare('tmp', 'fanout', { autoDelete: true });
    ex.bind('tmp', 'q');
    ex.bind('amq.direct', 'q', 'a');
    ex.bind('amq.direct', 'q', 'b');
    ex.bind('amq.direct', 'other', 'a');
    expect(
      ex
        .bindingsTo('q')
        .map((b) => `${b.source}/${b.routingKey}`)
        .sort(),
    ).toEqual(['amq.direct/a', 'amq.direct/b', 'tmp/']);
    expect(ex.removeDestination('q')).toBe(3);
    expect(ex.has('tmp')).toBe(false);
    expect(sorted(ex.route('amq.direct', 'a'))).toEqual(['other']);
    expect(ex.removeDestination('q')).toBe(0);
  });
});

describe('Exchanges: persistence', () => {
  it('reports every change to the owner', () => {
    const changed: string[] = [];
    const ex = new Exchanges({ onChange: (name) => changed.push(name) });
    ex.declare('logs', 'fanout');
    ex.declare('logs', 'fanout');
    ex.bind('logs', 'q');
    ex.bind('logs', 'q');
    ex.unbind('logs', 'q');
    ex.delete('logs');
    expect(changed).toEqual(['logs', 'logs', 'logs', 'logs']);
    expect(ex.exchangeToJSON('logs')).toBeUndefined();
  });

  it('round-trips durable exchanges and their bindings through JSON', () => {
    const ex = new Exchanges();
    ex.declare('logs', 'topic', {
      arguments: { 'alternate-exchange': 'ae', big: 2n ** 70n, when: new Date(5000) },
    });
    ex.declare('ae', 'fanout', { internal: true });
    ex.declare('tmp', 'direct', { durable: false });
    ex.bind('logs', 'q1', 'a.#');
    ex.bind('logs', 'gone', 'b.*');
    ex.bind('ae', 'q2');
    ex.bind('amq.headers', 'q1', '', { 'x-match': 'any', bytes: new Uint8Array([1, 2]), n: null });
    const json = JSON.parse(JSON.stringify(ex.toJSON()));
    expect(Object.keys(json).sort()).toEqual(['ae', 'amq.headers', 'logs']);

    const back = Exchanges.fromJSON(json, { keepDestination: (d) => d !== 'gone' });
    expect(back.get('logs')).toEqual(ex.get('logs') && { ...ex.get('logs'), bindingCount: 1 });
    expect(back.get('ae')).toEqual(ex.get('ae'));
    expect(back.has('tmp')).toBe(false);
    expect(sorted(back.route('logs', 'a.x'))).toEqual(['q1']);
    expect(sorted(back.route('logs', 'b.x'))).toEqual(['q2']);
    expect(sorted(back.route('amq.headers', '', { bytes: new Uint8Array([1, 2]) }))).toEqual([
      'q1',
    ]);
    expect(back.toJSON()).toEqual({
      ...json,
      logs: { ...json.logs, bindings: [json.logs.bindings[0]] },
    });
  });

  it('does not reload an auto-delete exchange whose bindings all went', () => {
    const ex = new Exchanges();
    ex.declare('tmp', 'direct', { autoDelete: true });
    ex.bind('tmp', 'q', 'a');
    const back = Exchanges.fromJSON(ex.toJSON(), { keepDestination: () => false });
    expect(back.has('tmp')).toBe(false);
  });
});
