/** Retention: dropping the head, marking records deleted, reclaiming segments and truncating. */
import assert from 'node:assert/strict';
import { bytesOf, type ConformanceTests, fill, readAll, records } from './harness.js';

export const retentionTests: ConformanceTests = {
  async 'dropBefore drops whole head segments, never the active one, and counts live records'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    const rs = records(9); // segments [1,2] [3,4] [5,6] [7,8] [9]
    fill(log, rs);
    log.markDeleted(2);
    assert.equal(log.dropBefore(1), 0, 'no segment ends before offset 1');
    assert.equal(log.dropBefore(4), 1, 'only [1,2] ends before 4; 2 was deleted');
    assert.equal(log.firstOffset, 3);
    assert.equal(log.get(1), undefined);
    assert.ok(Number.isNaN(log.timestampOf(1)));
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 3);
    assert.equal(log.count, 7);
    assert.equal(log.bytes, bytesOf(rs.slice(2)));
    assert.equal(log.dropBefore(1000), 6, 'everything but the active segment');
    assert.equal(log.firstOffset, 9);
    assert.equal(log.count, 1);
    assert.equal(log.get(9), rs[8]);
    assert.equal(log.nextOffset, 10);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 9);
    assert.deepEqual(readAll(log), [[9, rs[8]]]);
  },

  async 'markDeleted is idempotent and ignores unknown offsets'(h) {
    let log = await h.log();
    const rs = records(5);
    fill(log, rs);
    log.markDeleted(3);
    log.markDeleted(3);
    for (const o of [0, -1, 6, 1000, 2.5, Number.NaN]) log.markDeleted(o);
    assert.equal(log.count, 4);
    assert.equal(log.bytes, bytesOf(rs) - bytesOf([rs[2]!]));
    log = await h.reopenLog(log);
    log.markDeleted(3);
    assert.equal(log.count, 4);
    assert.equal(log.bytes, bytesOf(rs) - bytesOf([rs[2]!]));
    assert.equal(log.isDeleted(3), true);
    assert.equal(log.isDeleted(2), false);
    assert.equal(log.get(3), undefined);
    assert.equal(log.get(4), rs[3]);
    assert.equal(log.nextOffset, 6);
  },

  async 'segments whose records are all deleted are reclaimed, except the active one'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(7)); // segments [1,2] [3,4] [5,6] [7]
    for (const o of [3, 4]) log.markDeleted(o);
    assert.ok(!log.segments().some((s) => s.firstOffset <= 3 && s.lastOffset >= 3));
    for (const o of [1, 2]) log.markDeleted(o);
    assert.equal(log.firstOffset, 5);
    log.markDeleted(7);
    const active = log.segments().at(-1)!;
    assert.equal(active.lastOffset, 7, 'the active segment stays');
    assert.equal(active.deletedCount, active.count);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 5);
    assert.equal(log.count, 2);
    assert.deepEqual(readAll(log), [
      [5, 'rec-0005'],
      [6, 'rec-0006'],
    ]);
    assert.equal(log.get(3), undefined);
    assert.equal(log.append('x', 1), 8);
  },

  async 'truncate drops every record and offsets keep counting'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(5));
    log.truncate();
    assert.equal(log.count, 0);
    assert.equal(log.bytes, 0);
    assert.equal(log.firstOffset, 6);
    assert.equal(log.nextOffset, 6);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 6);
    assert.equal(log.nextOffset, 6);
    assert.deepEqual(readAll(log), []);
    assert.equal(log.append('z', 1), 6);
    assert.deepEqual(readAll(log, 0), [[6, 'z']]);
    assert.equal(log.get(5), undefined);
  },
};
