/** Cursors: reading from any offset, following appends, seeking, skipping deletions and dropped heads. */
import assert from 'node:assert/strict';
import { type ConformanceTests, fill, readAll, records } from './harness.js';

export const cursorTests: ConformanceTests = {
  async 'a cursor reads from the start, from the middle and from past the end'(h) {
    let log = await h.log('log', { segmentBytes: 24 });
    const rs = records(10);
    fill(log, rs);
    log = await h.reopenLog(log);
    const all = rs.map((r, i): [number, string] => [i + 1, r]);
    assert.deepEqual(readAll(log), all);
    assert.deepEqual(readAll(log, 0), all);
    assert.deepEqual(readAll(log, -5), all);
    assert.deepEqual(readAll(log, 4), all.slice(3));
    assert.deepEqual(readAll(log, 10), all.slice(9));
    assert.deepEqual(readAll(log, 11), []);
    const c = log.cursor(5);
    assert.ok(c.next());
    assert.equal(c.offset, 5);
    assert.equal(c.record, rs[4]);
    assert.equal(c.timestamp, 1005);
  },

  async 'a cursor at the end sees records appended later, across segments'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(3));
    log = await h.reopenLog(log);
    const c = log.cursor();
    assert.deepEqual(
      [c.next(), c.next(), c.next(), c.next(), c.next()],
      [true, true, true, false, false],
    );
    log.append('late-1', 5000);
    assert.ok(c.next());
    assert.deepEqual([c.offset, c.record, c.timestamp], [4, 'late-1', 5000]);
    assert.equal(c.next(), false);
    log.roll();
    log.append('late-2', 5001);
    log.append('late-3-longer-than-a-segment', 5002);
    assert.ok(c.next());
    assert.equal(c.record, 'late-2');
    assert.ok(c.next());
    assert.equal(c.record, 'late-3-longer-than-a-segment');
    assert.equal(c.next(), false);
  },

  async 'seek moves a cursor back, forward and past the end'(h) {
    let log = await h.log('log', { segmentBytes: 24 });
    fill(log, records(10));
    log = await h.reopenLog(log);
    const c = log.cursor();
    c.seek(7);
    assert.ok(c.next());
    assert.equal(c.offset, 7);
    c.seek(2);
    assert.ok(c.next());
    assert.equal(c.offset, 2);
    c.seek(0);
    assert.ok(c.next());
    assert.equal(c.offset, 1);
    c.seek(13);
    assert.equal(c.next(), false);
    fill(log, ['k', 'l', 'm', 'n']);
    assert.ok(c.next());
    assert.deepEqual([c.offset, c.record], [13, 'm']);
  },

  async 'a cursor skips deleted records'(h) {
    let log = await h.log('log', { segmentBytes: 24 });
    const rs = records(10);
    fill(log, rs);
    for (const o of [1, 4, 5, 10]) log.markDeleted(o);
    log = await h.reopenLog(log);
    assert.deepEqual(
      readAll(log).map(([o]) => o),
      [2, 3, 6, 7, 8, 9],
    );
    assert.deepEqual(
      readAll(log, 4).map(([o]) => o),
      [6, 7, 8, 9],
    );
    const c = log.cursor(9);
    assert.ok(c.next());
    log.append('after', 3000);
    assert.ok(c.next());
    assert.deepEqual([c.offset, c.record], [11, 'after']);
  },

  async 'a cursor continues from the oldest retained record after the head is dropped'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    fill(log, records(8)); // two records of 8 bytes per segment
    log = await h.reopenLog(log);
    const behind = log.cursor();
    assert.ok(behind.next());
    assert.equal(behind.offset, 1);
    const ahead = log.cursor(7);
    log.dropBefore(5);
    assert.equal(log.firstOffset, 5);
    assert.ok(behind.next());
    assert.equal(behind.offset, 5);
    assert.ok(ahead.next());
    assert.equal(ahead.offset, 7);
    const fresh = log.cursor(2);
    assert.ok(fresh.next());
    assert.equal(fresh.offset, 5);
    log.truncate();
    log.append('new', 9000);
    assert.ok(behind.next());
    assert.deepEqual([behind.offset, behind.record], [9, 'new']);
  },
};
