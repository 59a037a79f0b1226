/** Appending and reading by offset: gapless offsets, point reads, volume, sync and invalid arguments. */
import assert from 'node:assert/strict';
import { bytesOf, type ConformanceTests, fill, NS } from './harness.js';

export const appendTests: ConformanceTests = {
  async 'offsets start at 1 and are gapless'(h) {
    let log = await h.log();
    assert.equal(log.firstOffset, 1);
    assert.equal(log.nextOffset, 1);
    assert.equal(log.count, 0);
    assert.equal(log.bytes, 0);
    const rs = ['a', 'bb', 'ccc', 'ünï', '🐇'];
    fill(log, rs);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 1);
    assert.equal(log.nextOffset, 6);
    assert.equal(log.count, 5);
    assert.equal(log.bytes, bytesOf(rs));
    for (const [i, r] of rs.entries()) {
      assert.equal(log.get(i + 1), r);
      assert.equal(log.timestampOf(i + 1), 1000 + i + 1);
      assert.equal(log.isDeleted(i + 1), false);
    }
    assert.equal(log.append('next', 2000), 6);
  },

  async 'get and timestampOf give nothing for offsets never written'(h) {
    let log = await h.log();
    fill(log, ['a', 'b']);
    log = await h.reopenLog(log);
    for (const o of [0, -1, 3, 100, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.equal(log.get(o), undefined, `get(${o})`);
      assert.ok(Number.isNaN(log.timestampOf(o)), `timestampOf(${o})`);
      assert.equal(log.isDeleted(o), false, `isDeleted(${o})`);
    }
  },

  async 'fifty thousand appends keep their order and content'(h) {
    let log = await h.log('log', { segmentBytes: 64 * 1024 });
    const n = 50_000;
    for (let i = 1; i <= n; i++) log.append(`record ${i} ${'x'.repeat(i % 17)}`, 1_000_000 + i);
    await log.sync();
    log = await h.reopenLog(log);
    assert.equal(log.nextOffset, n + 1);
    assert.equal(log.count, n);
    const c = log.cursor();
    let expected = 1;
    while (c.next()) {
      if (c.offset !== expected || c.record !== `record ${expected} ${'x'.repeat(expected % 17)}`) {
        assert.fail(`offset ${expected}: got ${c.offset} ${c.record}`);
      }
      expected++;
    }
    assert.equal(expected, n + 1);
    assert.equal(log.get(31_337), `record 31337 ${'x'.repeat(31_337 % 17)}`);
    assert.equal(log.offsetAt(1_000_000 + 40_000), 40_000);
    assert.ok(log.segments().length > 1);
  },

  async 'sync resolves on logs, metadata and namespaces'(h) {
    const log = await h.log();
    log.append('a', 1);
    const ns = await h.adapter.namespace(NS);
    ns.meta.set('k', 1);
    await log.sync();
    await ns.meta.sync();
    await ns.sync();
  },

  async 'invalid arguments are typed errors that change nothing'(h) {
    const log = await h.log();
    log.append('a', 1);
    assert.throws(() => log.append('b', Number.NaN), TypeError);
    assert.equal(log.nextOffset, 2);
    const ns = await h.adapter.namespace(NS);
    for (const segmentBytes of [0, -1, 1.5, Number.NaN]) {
      await assert.rejects(async () => ns.openLog('bad', h.codec, { segmentBytes }), RangeError);
    }
    assert.deepEqual(await ns.listLogs(), ['log']);
  },
};
