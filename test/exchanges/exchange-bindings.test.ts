import { describe, expect, it } from 'vitest';
import { AccessRefusedError, NotFoundError } from '../../src/errors.js';
import { Exchanges } from '../../src/exchanges/registry.js';

const sorted = (s: Set<string>) => [...s].sort();

describe('Exchanges: exchange-to-exchange bindings', () => {
  it('routes on through a bound exchange with the same key', () => {
    const ex = new Exchanges();
    ex.declare('in', 'topic');
    ex.declare('all', 'fanout');
    ex.bindExchange('all', 'in', 'orders.*');
    ex.bind('all', 'audit');
    ex.bind('in', 'eu', 'orders.eu');
    expect(sorted(ex.route('in', 'orders.eu'))).toEqual(['audit', 'eu']);
    expect(sorted(ex.route('in', 'orders.us'))).toEqual(['audit']);
    expect(sorted(ex.route('in', 'stock.eu'))).toEqual([]);
  });

  it('reaches a queue once through several paths, and a cycle ends', () => {
    const ex = new Exchanges();
    for (const name of ['a', 'b', 'c']) ex.declare(name, 'fanout');
    ex.bindExchange('b', 'a');
    ex.bindExchange('c', 'b');
    ex.bindExchange('a', 'c');
    ex.bindExchange('c', 'a');
    ex.bindExchange('a', 'a');
    ex.bind('c', 'q');
    ex.bind('a', 'q');
    expect(sorted(ex.route('b', ''))).toEqual(['q']);
    expect(sorted(ex.route('a', ''))).toEqual(['q']);
  });

  it('keeps a queue and an exchange of the same name apart', () => {
    const ex = new Exchanges();
    ex.declare('src', 'fanout');
    ex.declare('same', 'fanout');
    ex.bindExchange('same', 'src');
    ex.bind('same', 'other');
    expect(sorted(ex.route('src', ''))).toEqual(['other']);
    ex.bind('src', 'same');
    expect(sorted(ex.route('src', ''))).toEqual(['other', 'same']);
    expect(
      ex
        .bindings('src')
        .map((b) => `${b.destinationType}:${b.destination}`)
        .sort(),
    ).toEqual(['exchange:same', 'queue:same']);
    expect(ex.bindingsTo('same', 'exchange').map((b) => b.source)).toEqual(['src']);
    expect(ex.bindingsTo('same').map((b) => b.source)).toEqual(['src']);
  });

  it('hands a message to the alternate of the exchange whose bindings matched nothing', () => {
    const ex = new Exchanges();
    ex.declare('ae', 'fanout');
    ex.bind('ae', 'unrouted');
    ex.declare('inner', 'direct', { arguments: { 'alternate-exchange': 'ae' } });
    ex.declare('outer', 'fanout');
    ex.bindExchange('inner', 'outer');
    ex.bind('inner', 'k-queue', 'k');
    expect(sorted(ex.route('outer', 'k'))).toEqual(['k-queue']);
    expect(sorted(ex.route('outer', 'other'))).toEqual(['unrouted']);
  });

  it('routes by every key given, each queue once', () => {
    const ex = new Exchanges();
    ex.declare('d', 'direct');
    ex.bind('d', 'q1', 'one');
    ex.bind('d', 'q2', 'two');
    ex.bind('d', 'q2', 'three');
    expect(sorted(ex.route('d', ['one', 'two', 'three', 'four']))).toEqual(['q1', 'q2']);
    expect(
      sorted(new Exchanges({ hasDestination: (q) => q !== 'x' }).route('', ['a', 'x'])),
    ).toEqual(['a']);
  });

  it('refuses the default exchange (403) and missing exchanges (404) on either side', () => {
    const ex = new Exchanges();
    ex.declare('e', 'direct');
    expect(() => ex.bindExchange('', 'e')).toThrow(AccessRefusedError);
    expect(() => ex.bindExchange('e', '')).toThrow(AccessRefusedError);
    expect(() => ex.bindExchange('missing', 'e')).toThrow(
      new NotFoundError("no exchange 'missing' in vhost '/'"),
    );
    expect(() => ex.bindExchange('e', 'missing')).toThrow(NotFoundError);
    expect(ex.bindings('e')).toEqual([]);
  });

  it('binding twice is one binding; unbinding a missing one is no error', () => {
    const ex = new Exchanges();
    ex.declare('a', 'direct');
    ex.declare('b', 'direct');
    expect(ex.bindExchange('b', 'a', 'k')).toBe(true);
    expect(ex.bindExchange('b', 'a', 'k')).toBe(false);
    expect(ex.get('a')?.bindingCount).toBe(1);
    expect(ex.unbindExchange('b', 'a', 'other')).toBe(false);
    expect(ex.unbindExchange('b', 'a', 'k')).toBe(true);
    expect(ex.get('a')?.bindingCount).toBe(0);
  });

  it('deleting an exchange removes the bindings where it is source or destination', () => {
    const changed: string[] = [];
    const ex = new Exchanges({ onChange: (name) => changed.push(name) });
    for (const name of ['up', 'mid', 'down']) ex.declare(name, 'fanout');
    ex.bindExchange('mid', 'up');
    ex.bindExchange('down', 'mid');
    ex.bind('down', 'q');
    changed.length = 0;
    expect(ex.delete('mid')).toBe(true);
    expect(ex.bindings('up')).toEqual([]);
    expect(ex.bindingsTo('down', 'exchange')).toEqual([]);
    expect(changed.sort()).toEqual(['mid', 'up']);
    expect(sorted(ex.route('up', ''))).toEqual([]);
  });

  it('an auto-delete exchange goes with its last binding as source, and takes its own along', () => {
    const ex = new Exchanges();
    ex.declare('root', 'fanout');
    ex.declare('auto', 'fanout', { autoDelete: true });
    ex.declare('auto2', 'fanout', { autoDelete: true });
    ex.bindExchange('auto', 'auto2'); // auto2's one binding: to auto
    ex.bindExchange('auto', 'root');
    ex.bind('auto', 'q');
    ex.bindExchange('root', 'auto');
    // Losing its binding as destination does not delete an exchange.
    ex.unbindExchange('auto', 'root');
    expect(ex.has('auto')).toBe(true);
    ex.unbindExchange('root', 'auto');
    ex.bind('auto', 'q');
    expect(ex.has('auto')).toBe(true);
    // auto loses its last binding: it goes, and auto2, whose only binding led to it, goes too.
    ex.unbind('auto', 'q');
    expect(ex.has('auto')).toBe(false);
    expect(ex.has('auto2')).toBe(false);
    expect(ex.has('root')).toBe(true);
  });

  it('keeps exchange bindings through toJSON and fromJSON, dropping those to missing exchanges', () => {
    const ex = new Exchanges();
    ex.declare('a', 'topic');
    ex.declare('b', 'fanout');
    ex.declare('t', 'fanout', { durable: false });
    ex.bindExchange('b', 'a', 'x.#', { note: 1 });
    ex.bindExchange('t', 'a', 'y');
    ex.bind('b', 'q');
    const snapshot = ex.toJSON();
    expect(snapshot.a?.bindings).toEqual([
      { destination: 'b', destinationType: 'exchange', routingKey: 'x.#', args: { note: 1 } },
      { destination: 't', destinationType: 'exchange', routingKey: 'y', args: {} },
    ]);
    const back = Exchanges.fromJSON(JSON.parse(JSON.stringify(snapshot)));
    expect(back.bindings('a')).toEqual([
      { destination: 'b', destinationType: 'exchange', routingKey: 'x.#', args: { note: 1 } },
    ]);
    expect(sorted(back.route('a', 'x.1'))).toEqual(['q']);
  });
});
