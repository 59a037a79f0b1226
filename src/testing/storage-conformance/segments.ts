/** Segments: what `segments()` reports, `offsetAt` across them and `roll()`. */
import assert from 'node:assert/strict';
import type { Log, SegmentInfo } from '../../storage/types.js';
import { testRecordCodec } from './codecs.js';
import { bytesOf, type ConformanceTests, fill, range, records } from './harness.js';

function nonEmpty(segments: readonly SegmentInfo[]): SegmentInfo[] {
  return segments.filter((s) => s.count > 0);
}

/** Every log invariant that `segments()` and the totals must satisfy. */
function checkSegments(
  log: Log<string>,
  expected: ReadonlyMap<number, string>,
  segmentBytes: number,
) {
  const segs = log.segments();
  assert.ok(segs.length >= 1, 'a log always has an active segment');
  for (let i = 1; i < segs.length; i++) {
    assert.ok(segs[i]!.id > segs[i - 1]!.id, 'segment ids ascend');
    assert.ok(segs[i]!.firstOffset > segs[i - 1]!.lastOffset, 'segments are ordered');
  }
  let live = 0;
  let liveBytes = 0;
  for (const s of segs) {
    assert.equal(s.lastOffset - s.firstOffset + 1, s.count);
    if (s.count === 0) {
      assert.ok(Number.isNaN(s.firstTimestamp) && Number.isNaN(s.lastTimestamp));
      continue;
    }
    assert.ok(s.count === 1 || s.bytes <= segmentBytes, `segment ${s.id} exceeds segmentBytes`);
    assert.equal(s.firstTimestamp, log.timestampOf(s.firstOffset));
    assert.equal(s.lastTimestamp, log.timestampOf(s.lastOffset));
    let deleted = 0;
    for (const o of range(s.firstOffset, s.lastOffset)) {
      const r = expected.get(o);
      if (r === undefined) deleted++;
      else {
        live++;
        liveBytes += testRecordCodec.byteLength(r);
      }
    }
    assert.equal(s.deletedCount, deleted, `deletedCount of segment ${s.id}`);
  }
  assert.equal(log.count, live, 'count');
  assert.equal(log.bytes, liveBytes, 'bytes');
  const last = segs[segs.length - 1]!;
  assert.equal(last.lastOffset, log.nextOffset - 1, 'the last segment ends at the log end');
}

export const segmentTests: ConformanceTests = {
  async 'segments() summarizes every segment'(h) {
    const segmentBytes = 30;
    let log = await h.log('log', { segmentBytes });
    const rs = records(20);
    const expected = new Map(rs.map((r, i) => [i + 1, r]));
    fill(log, rs);
    log.markDeleted(2);
    log.markDeleted(9);
    expected.delete(2);
    expected.delete(9);
    checkSegments(log, expected, segmentBytes);
    const before = nonEmpty(log.segments()).map((s) => [s.firstOffset, s.lastOffset, s.bytes]);
    assert.ok(before.length >= 5, 'segments of 30 bytes hold at most three 8-byte records');
    log = await h.reopenLog(log);
    checkSegments(log, expected, segmentBytes);
    const after = nonEmpty(log.segments()).map((s) => [s.firstOffset, s.lastOffset, s.bytes]);
    assert.deepEqual(after, before);
    for (const s of nonEmpty(log.segments())) {
      assert.equal(s.bytes, bytesOf(rs.slice(s.firstOffset - 1, s.lastOffset)));
    }
    const more = records(4).map((r) => `${r}!`);
    fill(log, more);
    for (const [i, r] of more.entries()) expected.set(21 + i, r);
    checkSegments(log, expected, segmentBytes);
  },

  async 'offsetAt finds the first record at or after a timestamp'(h) {
    let log = await h.log('log', { segmentBytes: 16 });
    assert.equal(log.offsetAt(0), 1);
    const ts = [10, 10, 10, 20, 20, 20, 20, 30, 40, 40, 50];
    fill(log, records(ts.length), ts);
    log = await h.reopenLog(log);
    const cases: Array<[number, number]> = [
      [Number.NEGATIVE_INFINITY, 1],
      [0, 1],
      [10, 1],
      [11, 4],
      [20, 4],
      [25, 8],
      [30, 8],
      [40, 9],
      [45, 11],
      [50, 11],
      [51, 12],
      [Number.POSITIVE_INFINITY, 12],
    ];
    for (const [t, o] of cases) assert.equal(log.offsetAt(t), o, `offsetAt(${t})`);
    log.dropBefore(5);
    assert.equal(log.offsetAt(0), log.firstOffset);
    assert.equal(log.offsetAt(40), 9);
    log.roll();
    assert.equal(log.offsetAt(51), log.nextOffset);
  },

  async 'roll starts a new segment so every earlier one can be dropped'(h) {
    let log = await h.log();
    fill(log, ['a', 'b', 'c']);
    log.roll();
    fill(log, ['d', 'e']);
    const segs = nonEmpty(log.segments());
    assert.equal(segs.length, 2);
    assert.deepEqual(
      segs.map((s) => [s.firstOffset, s.lastOffset, s.count]),
      [
        [1, 3, 3],
        [4, 5, 2],
      ],
    );
    log.roll();
    assert.equal(log.dropBefore(log.nextOffset), 5);
    assert.equal(log.count, 0);
    assert.equal(log.firstOffset, 6);
    log = await h.reopenLog(log);
    assert.equal(log.firstOffset, 6);
    assert.equal(log.nextOffset, 6);
    assert.equal(log.append('f', 1), 6);
  },
};
