/** Closing: a closed log, namespace or adapter throws `MQLITE_CLOSED`; closing twice is harmless. */
import assert from 'node:assert/strict';
import { type ConformanceTests, fill, NS, throwsClosed } from './harness.js';

export const closingTests: ConformanceTests = {
  async 'a closed log throws MQLITE_CLOSED'(h) {
    const log = await h.log();
    fill(log, ['a', 'b']);
    const cursor = log.cursor();
    await log.close();
    const calls: Record<string, () => unknown> = {
      append: () => log.append('c', 1),
      sync: () => log.sync(),
      get: () => log.get(1),
      timestampOf: () => log.timestampOf(1),
      cursor: () => log.cursor(),
      'cursor.next': () => cursor.next(),
      segments: () => log.segments(),
      offsetAt: () => log.offsetAt(0),
      dropBefore: () => log.dropBefore(2),
      markDeleted: () => log.markDeleted(1),
      isDeleted: () => log.isDeleted(1),
      roll: () => log.roll(),
      truncate: () => log.truncate(),
    };
    for (const [name, call] of Object.entries(calls)) await throwsClosed(name, call);
  },

  async 'a closed namespace throws MQLITE_CLOSED'(h) {
    const ns = await h.adapter.namespace(NS);
    const log = await ns.openLog('log', h.codec);
    ns.meta.set('k', 1);
    await ns.close();
    await ns.close();
    await throwsClosed('openLog', () => ns.openLog('log', h.codec));
    await throwsClosed('listLogs', () => ns.listLogs());
    await throwsClosed('deleteLog', () => ns.deleteLog('log'));
    await throwsClosed('meta.get', () => ns.meta.get('k'));
    await throwsClosed('meta.set', () => ns.meta.set('k', 2));
    await throwsClosed('meta.entries', () => ns.meta.entries());
    await throwsClosed('log.append', () => log.append('a', 1));
    const again = await h.adapter.namespace(NS);
    assert.notEqual(again, ns);
    assert.equal(again.meta.get('k'), 1);
  },

  async 'open(), where the adapter has it, may be called again and after first use'(h) {
    if (!h.adapter.open) return;
    await h.adapter.open();
    await h.adapter.open();
    await h.adapter.namespace(NS);
    await h.adapter.open();
    assert.deepEqual(await h.adapter.listNamespaces(), [NS]);
  },

  async 'an adapter closed before any use throws MQLITE_CLOSED'(h) {
    await h.adapter.close();
    await throwsClosed('namespace', () => h.adapter.namespace(NS));
    await throwsClosed('listNamespaces', () => h.adapter.listNamespaces());
    if (h.adapter.open) await throwsClosed('open', () => h.adapter.open!());
  },

  async 'a closed adapter throws MQLITE_CLOSED and closing again is harmless'(h) {
    const ns = await h.adapter.namespace(NS);
    const log = await ns.openLog('log', h.codec);
    log.append('a', 1);
    await h.adapter.close();
    await h.adapter.close();
    await throwsClosed('namespace', () => h.adapter.namespace(NS));
    await throwsClosed('listNamespaces', () => h.adapter.listNamespaces());
    await throwsClosed('deleteNamespace', () => h.adapter.deleteNamespace(NS));
    await throwsClosed('openLog', () => ns.openLog('log', h.codec));
    await throwsClosed('meta.get', () => ns.meta.get('k'));
    await throwsClosed('log.append', () => log.append('b', 2));
    await throwsClosed('log.get', () => log.get(1));
  },
};
