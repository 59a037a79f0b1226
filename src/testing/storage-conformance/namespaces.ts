/** Namespaces and logs: any name, kept apart, listed, deleted and opened again. */
import assert from 'node:assert/strict';
import { type ConformanceTests, fill, NS, readAll, throwsClosed } from './harness.js';

const NAMES = [
  'plain',
  'Plain',
  '../x',
  '..',
  '.',
  '/',
  'a/b',
  'a\\b',
  'a\u0000b',
  'con',
  'with space',
  'q:1?*',
  '🐇🥕',
  `${'ü'.repeat(127)}x`, // 255 bytes of UTF-8
  'x'.repeat(255),
];

export const namespaceTests: ConformanceTests = {
  async 'namespaces of any name are kept apart'(h) {
    for (const name of NAMES) {
      const ns = await h.adapter.namespace(name);
      assert.equal(ns.name, name);
      ns.meta.set('name', name);
      const log = await ns.openLog('log', h.codec);
      log.append(`in ${name}`, 1);
      await ns.sync();
    }
    await h.reopen();
    assert.deepEqual(await h.adapter.listNamespaces(), [...NAMES].sort());
    for (const name of NAMES) {
      const ns = await h.adapter.namespace(name);
      assert.equal(ns.meta.get('name'), name);
      assert.deepEqual([...ns.meta.entries()], [['name', name]]);
      assert.deepEqual(await ns.listLogs(), ['log']);
      const log = await ns.openLog('log', h.codec);
      assert.deepEqual(readAll(log), [[1, `in ${name}`]]);
    }
  },

  async 'logs of any name are kept apart within a namespace'(h) {
    const ns = await h.adapter.namespace(NS);
    for (const name of NAMES) {
      const log = await ns.openLog(name, h.codec);
      assert.equal(log.name, name);
      fill(log, [name, name]);
    }
    await h.reopen();
    const again = await h.adapter.namespace(NS);
    assert.deepEqual(await again.listLogs(), [...NAMES].sort());
    for (const name of NAMES) {
      const log = await again.openLog(name, h.codec);
      assert.deepEqual(readAll(log), [
        [1, name],
        [2, name],
      ]);
    }
  },

  async 'an empty namespace and an empty log exist once created'(h) {
    const ns = await h.adapter.namespace('empty');
    await ns.openLog('empty-log', h.codec);
    await h.reopen();
    assert.deepEqual(await h.adapter.listNamespaces(), ['empty']);
    assert.deepEqual(await (await h.adapter.namespace('empty')).listLogs(), ['empty-log']);
  },

  async 'deleteNamespace removes its logs and metadata'(h) {
    const doomed = await h.adapter.namespace('doomed');
    doomed.meta.set('k', 1);
    const log = await doomed.openLog('log', h.codec);
    log.append('a', 1);
    const kept = await h.adapter.namespace('kept');
    kept.meta.set('k', 2);
    await h.adapter.deleteNamespace('doomed');
    await h.adapter.deleteNamespace('never-existed');
    await throwsClosed('append to a log of a deleted namespace', () => log.append('b', 2));
    assert.deepEqual(await h.adapter.listNamespaces(), ['kept']);
    await h.reopen();
    assert.deepEqual(await h.adapter.listNamespaces(), ['kept']);
    const reborn = await h.adapter.namespace('doomed');
    assert.equal(reborn.meta.get('k'), undefined);
    assert.deepEqual(await reborn.listLogs(), []);
    const fresh = await reborn.openLog('log', h.codec);
    assert.equal(fresh.nextOffset, 1);
    assert.equal(fresh.count, 0);
    assert.equal((await h.adapter.namespace('kept')).meta.get('k'), 2);
  },

  async 'listLogs lists every log and deleteLog removes one'(h) {
    const ns = await h.adapter.namespace(NS);
    const a = await ns.openLog('a', h.codec);
    const b = await ns.openLog('b', h.codec);
    fill(a, ['1', '2']);
    fill(b, ['3']);
    assert.deepEqual(await ns.listLogs(), ['a', 'b']);
    await ns.deleteLog('a');
    await ns.deleteLog('never-existed');
    await throwsClosed('append to a deleted log', () => a.append('x', 1));
    assert.deepEqual(await ns.listLogs(), ['b']);
    await h.reopen();
    const again = await h.adapter.namespace(NS);
    assert.deepEqual(await again.listLogs(), ['b']);
    const reborn = await again.openLog('a', h.codec);
    assert.equal(reborn.nextOffset, 1);
    assert.deepEqual(readAll(await again.openLog('b', h.codec)), [[1, '3']]);
  },

  async 'opening an open log returns the same instance; a closed one opens afresh'(h) {
    const ns = await h.adapter.namespace(NS);
    const first = await ns.openLog('log', h.codec);
    assert.equal(await ns.openLog('log', h.codec), first);
    fill(first, ['a', 'b']);
    await first.close();
    await first.close();
    await throwsClosed('append to a closed log', () => first.append('c', 1));
    const second = await ns.openLog('log', h.codec);
    assert.notEqual(second, first);
    assert.deepEqual(readAll(second), [
      [1, 'a'],
      [2, 'b'],
    ]);
    assert.equal(await (await h.adapter.namespace(NS)).openLog('log', h.codec), second);
  },
};
