/** Record bytes: what a log keeps of an appended record and what a decoded view holds. */
import assert from 'node:assert/strict';
import type { Log, LogCursor, RecordCodec } from '../../storage/types.js';
import { type ConformanceTests, NS } from './harness.js';

/** Records that are bytes, as the queues' messages carry a body. */
const bytesCodec: RecordCodec<Uint8Array> = {
  byteLength: (record) => record.byteLength,
  encode: (record) => record,
  decode: (bytes) => bytes.slice(),
};

/** {@link bytesCodec} with `packing`: the bytes are the payload, with an empty envelope. */
const packedBytesCodec: RecordCodec<Uint8Array> = {
  ...bytesCodec,
  packing: {
    payload: (record) => record,
    envelope: () => new Uint8Array(0),
    matches: () => true,
    unpack: (_, buffer, byteOffset, byteLength) => new Uint8Array(buffer, byteOffset, byteLength),
  },
};

/** {@link bytesCodec} and {@link packedBytesCodec} decoding records as views of the bytes read. */
const viewBytesCodecs = [bytesCodec, packedBytesCodec].map(
  (codec): RecordCodec<Uint8Array> => ({
    ...codec,
    decodeView: (bytes, offset, length) => bytes.subarray(offset, offset + length),
  }),
);

/** Reads every record of `log`, as a reader that drops them does. */
function readAllBytes(log: Log<Uint8Array>): void {
  const cursor = log.cursor();
  while (cursor.next()) void cursor.record;
}

export const recordBytesTests: ConformanceTests = {
  async 'a persistent or packing log keeps nothing of an appended record'(h) {
    const codec = h.codec.packing === undefined ? bytesCodec : packedBytesCodec;
    const { persistent, packing } = h.adapter.supports;
    // Persistent adapters encode every record; packing ones copy the payload of packed records.
    if (!persistent && !(packing && codec.packing !== undefined)) return;
    const ns = await h.adapter.namespace(NS);
    const log = await ns.openLog('bytes', codec);
    const record = new TextEncoder().encode('original');
    log.append(record, 1);
    record.fill(0x78);
    const stored = new TextDecoder();
    assert.equal(stored.decode(log.get(1)), 'original');
    const cursor = log.cursor();
    assert.ok(cursor.next());
    assert.equal(stored.decode(cursor.record), 'original');
    await log.sync();
    await h.reopen();
    const again = await (await h.adapter.namespace(NS)).openLog('bytes', codec);
    assert.equal(stored.decode(again.get(1)), 'original');
  },

  async 'records decoded as views of the bytes read stay as they were read'(h) {
    const codec = viewBytesCodecs[h.codec.packing === undefined ? 0 : 1]!;
    const ns = await h.adapter.namespace(NS);
    let log = await ns.openLog('views', codec, { segmentBytes: 2048 });
    // Records of distinct bytes over several segments, one bigger than any read buffer.
    const expected = new Map<number, Uint8Array>();
    const add = (length: number) => {
      const record = new Uint8Array(length);
      for (let i = 0; i < length; i++) record[i] = (log.nextOffset * 7 + i) & 0xff;
      expected.set(log.append(record, 1000 + log.nextOffset), record.slice());
    };
    for (let i = 0; i < 300; i++) add(1 + ((i * 37) % 120));
    add(600 * 1024);
    for (let i = 0; i < 50; i++) add(64);
    await log.sync();
    await h.reopen();
    log = await (await h.adapter.namespace(NS)).openLog('views', codec);
    const kept = new Map<number, Uint8Array>();
    const keep = (cursor: LogCursor<Uint8Array>) => {
      while (cursor.next()) kept.set(cursor.offset, cursor.record);
    };
    keep(log.cursor());
    // Reading on: the same log by other cursors, seeks, point reads, frames still in the
    // write buffer, a head drop and the deletions that compact a segment.
    for (let i = 0; i < 3; i++) readAllBytes(log);
    const cursor = log.cursor();
    for (const offset of [200, 5, 301, 1]) {
      cursor.seek(offset);
      assert.ok(cursor.next());
      kept.set(cursor.offset, cursor.record);
    }
    for (let i = 0; i < 40; i++) add(90);
    keep(log.cursor(340));
    await log.sync();
    for (let i = 0; i < 40; i++) add(90);
    readAllBytes(log);
    for (const offset of [3, 150, 350]) log.get(offset);
    for (let offset = 100; offset < 200; offset++) log.markDeleted(offset);
    log.dropBefore(60);
    await log.sync();
    readAllBytes(log);
    await h.reopen();
    readAllBytes(await (await h.adapter.namespace(NS)).openLog('views', codec));
    assert.equal(kept.size, expected.size - 40);
    for (const [offset, record] of kept) {
      assert.deepEqual(record, expected.get(offset), `record ${offset}`);
    }
  },
};
