/** Namespace metadata: set, read, listed in key order, isolated from callers and JSON only. */
import assert from 'node:assert/strict';
import type { JsonValue } from '../../storage/types.js';
import { type ConformanceTests, NS } from './harness.js';

export const metadataTests: ConformanceTests = {
  async 'metadata is set, read, overwritten and deleted'(h) {
    let ns = await h.adapter.namespace(NS);
    const value = {
      args: { 'x-max-length': 10, 'x-queue-type': 'stream' },
      list: [1, 'two', null, true],
    };
    ns.meta.set('queue', value);
    ns.meta.set('offset/consumer-1', 42);
    ns.meta.set('gone', 'soon');
    ns.meta.set('overwritten', 1);
    ns.meta.set('overwritten', [2]);
    ns.meta.delete('gone');
    ns.meta.delete('never-there');
    assert.equal(ns.meta.get('gone'), undefined);
    await ns.meta.sync();
    await h.reopen();
    ns = await h.adapter.namespace(NS);
    assert.deepEqual(ns.meta.get('queue'), value);
    assert.equal(ns.meta.get('offset/consumer-1'), 42);
    assert.deepEqual(ns.meta.get('overwritten'), [2]);
    assert.equal(ns.meta.get('gone'), undefined);
    assert.equal(ns.meta.get('missing'), undefined);
  },

  async 'metadata entries come in key order, filtered by prefix'(h) {
    let ns = await h.adapter.namespace(NS);
    for (const key of ['b/2', 'a', 'b/10', 'c', 'b/1', 'b', 'ba']) ns.meta.set(key, key);
    ns.meta.delete('c');
    await h.reopen();
    ns = await h.adapter.namespace(NS);
    assert.deepEqual(
      [...ns.meta.entries()].map(([k]) => k),
      ['a', 'b', 'b/1', 'b/10', 'b/2', 'ba'],
    );
    assert.deepEqual(
      [...ns.meta.entries('b/')],
      [
        ['b/1', 'b/1'],
        ['b/10', 'b/10'],
        ['b/2', 'b/2'],
      ],
    );
    assert.deepEqual([...ns.meta.entries('zzz')], []);
    assert.deepEqual(
      [...ns.meta.entries('')].map(([k]) => k),
      ['a', 'b', 'b/1', 'b/10', 'b/2', 'ba'],
    );
  },

  async 'metadata cannot be changed through the values passed in or read back'(h) {
    const ns = await h.adapter.namespace(NS);
    const value = { list: [1, 2], nested: { n: 1 } };
    ns.meta.set('k', value);
    value.list.push(3);
    value.nested.n = 2;
    assert.deepEqual(ns.meta.get('k'), { list: [1, 2], nested: { n: 1 } });
    const read = ns.meta.get('k') as { list: number[]; nested: { n: number } };
    try {
      read.list.push(4);
      read.nested.n = 5;
    } catch {
      // Frozen values throw in strict mode; copies accept the write. Either way nothing changes.
    }
    assert.deepEqual(ns.meta.get('k'), { list: [1, 2], nested: { n: 1 } });
    const [[, listed]] = [...ns.meta.entries('k')] as [[string, { list: number[] }]];
    try {
      listed.list.push(5);
    } catch {}
    assert.deepEqual(ns.meta.get('k'), { list: [1, 2], nested: { n: 1 } });
  },

  async 'metadata refuses values that are not JSON and keeps the old value'(h) {
    const ns = await h.adapter.namespace(NS);
    ns.meta.set('k', 'old');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const bad: unknown[] = [
      undefined,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      () => 1,
      Symbol('s'),
      10n,
      new Date(0),
      new Map(),
      { nested: [undefined] },
      cyclic,
    ];
    for (const value of bad) {
      assert.throws(() => ns.meta.set('k', value as JsonValue), TypeError, String(value));
      assert.throws(() => ns.meta.set('new', value as JsonValue), TypeError, String(value));
    }
    assert.equal(ns.meta.get('k'), 'old');
    assert.equal(ns.meta.get('new'), undefined);
  },
};
