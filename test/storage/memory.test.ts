import { describe, expect, test } from 'vitest';
import { memoryStorage } from '../../src/storage/memory.js';
import type { RecordCodec } from '../../src/storage/types.js';
import {
  packedTestRecordCodec,
  storageConformance,
  testRecordCodec,
} from '../../src/testing/index.js';

storageConformance({ test, factory: () => memoryStorage() });
// Reopening by name, without closing: every handle is looked up again on the same data.
storageConformance({
  test,
  factory: () => memoryStorage(),
  reopen: async (storage) => storage,
  prefix: 'reopened by name: ',
});

interface Payload {
  n: number;
  body: Uint8Array;
}

/** Counts encode/decode calls: the memory adapter must never make them. */
function countingCodec() {
  const calls = { encode: 0, decode: 0 };
  const codec: RecordCodec<Payload> = {
    byteLength: (r) => r.body.byteLength,
    encode: () => {
      calls.encode++;
      return new Uint8Array();
    },
    decode: () => {
      calls.decode++;
      return { n: 0, body: new Uint8Array() };
    },
  };
  return { codec, calls };
}

describe('memoryStorage', () => {
  test('keeps the appended objects themselves, never encoding them', async () => {
    const storage = memoryStorage();
    const { codec, calls } = countingCodec();
    const log = await (await storage.namespace('q')).openLog('log', codec);
    const record = { n: 1, body: new Uint8Array(100) };
    log.append(record, 1);
    expect(log.get(1)).toBe(record);
    const cursor = log.cursor();
    expect(cursor.next()).toBe(true);
    expect(cursor.record).toBe(record);
    expect(log.bytes).toBe(100);
    expect(calls).toEqual({ encode: 0, decode: 0 });
    await storage.close();
  });

  test('reports what it supports', () => {
    expect(memoryStorage().supports).toEqual({
      persistent: false,
      fsync: false,
      compaction: true,
      packing: true,
    });
  });

  test('metadata values read back are frozen', async () => {
    const ns = await memoryStorage().namespace('q');
    ns.meta.set('k', { a: [1] });
    const value = ns.meta.get('k') as { a: number[] };
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen(value.a)).toBe(true);
    expect(() => value.a.push(2)).toThrow(TypeError);
  });

  test('a "__proto__" metadata key stays a plain key', async () => {
    const ns = await memoryStorage().namespace('q');
    ns.meta.set('k', JSON.parse('{"__proto__": {"polluted": true}}'));
    const value = ns.meta.get('k') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect((value as { polluted?: boolean }).polluted).toBeUndefined();
  });

  test('logs use the adapter-wide segment size unless they set their own', async () => {
    const ns = await memoryStorage({ segmentBytes: 16 }).namespace('q');
    const small = await ns.openLog('small', testRecordCodec);
    const large = await ns.openLog('large', testRecordCodec, { segmentBytes: 1000 });
    for (let i = 0; i < 10; i++) {
      small.append('12345678', i);
      large.append('12345678', i);
    }
    expect(small.segments()).toHaveLength(5);
    expect(large.segments()).toHaveLength(1);
  });

  test('an invalid adapter-wide segment size is a RangeError', () => {
    expect(() => memoryStorage({ segmentBytes: 0 })).toThrow(RangeError);
  });

  test('segment summaries are snapshots the caller cannot change', async () => {
    const log = await (await memoryStorage().namespace('q')).openLog('log', testRecordCodec);
    log.append('a', 1);
    const [info] = log.segments();
    expect(Object.isFrozen(info)).toBe(true);
    log.append('b', 2);
    expect(info?.count).toBe(1);
    expect(log.segments()[0]?.count).toBe(2);
  });

  test('a record larger than a segment gets a segment of its own', async () => {
    const log = await (await memoryStorage().namespace('q')).openLog('log', testRecordCodec, {
      segmentBytes: 4,
    });
    log.append('12', 1);
    log.append('123456789', 2);
    log.append('1', 3);
    expect(log.segments().map((s) => [s.firstOffset, s.count, s.bytes])).toEqual([
      [1, 1, 2],
      [2, 1, 9],
      [3, 1, 1],
    ]);
  });

  test('packs records of a codec with packing: reads are new objects with a copy of the payload', async () => {
    const storage = memoryStorage();
    const { codec, calls } = countingCodec();
    const packing = {
      ...codec,
      packing: {
        payload: (r: Payload) => r.body,
        envelope: (r: Payload) => ({ n: r.n, body: new Uint8Array(0) }),
        matches: (r: Payload, e: Payload) => r.n === e.n,
        unpack: (e: Payload, buffer: ArrayBuffer, offset: number, length: number) => ({
          n: e.n,
          body: new Uint8Array(buffer, offset, length),
        }),
      },
    } satisfies RecordCodec<Payload>;
    const log = await (await storage.namespace('q')).openLog('log', packing, {
      segmentBytes: 2 * 1024 * 1024,
    });
    // Small payloads fill shared buffers of growing size, up to their 1 MiB cap (262_144 bytes is
    // the largest payload that shares one), across segments; larger ones get one of their own.
    const sizes = [100, 5000, 300_000, 0, 100, 200_000, 7, 262_144, 262_145];
    const records = Array.from({ length: 120 }, (_, i) => ({
      n: Math.floor(i / 3),
      body: new Uint8Array(sizes[i % sizes.length]!).fill(i % 251),
    }));
    for (const record of records) log.append(record, 1);
    for (const record of records) record.body.fill(255);
    expect(log.segments().length).toBeGreaterThan(4);
    const cursor = log.cursor();
    for (let i = 0; i < records.length; i++) {
      expect(cursor.next()).toBe(true);
      const read = cursor.record;
      expect(read).not.toBe(records[i]);
      expect(read.n).toBe(Math.floor(i / 3));
      const expected = Buffer.alloc(sizes[i % sizes.length]!, i % 251);
      const body = Buffer.from(read.body.buffer, read.body.byteOffset, read.body.byteLength);
      expect(body.equals(expected), `payload of record ${i}`).toBe(true);
    }
    expect(cursor.next()).toBe(false);
    expect(log.get(3)?.body.byteLength).toBe(300_000);
    expect(calls).toEqual({ encode: 0, decode: 0 });
    await storage.close();
  });

  test('a packed record is read when first asked for: after a drop it is there, after a delete not', async () => {
    const storage = memoryStorage();
    const log = await (await storage.namespace('q')).openLog('log', packedTestRecordCodec, {
      segmentBytes: 8,
    });
    for (const r of ['rec-0001', 'rec-0002', 'rec-0003']) log.append(r, 1);
    const cursor = log.cursor();
    expect(cursor.next()).toBe(true);
    log.dropBefore(3); // drops the segments of offsets 1 and 2 under the cursor
    expect(cursor.record).toBe('rec-0001');
    expect(cursor.next()).toBe(true);
    expect([cursor.offset, cursor.record]).toEqual([3, 'rec-0003']);
    log.append('rec-0004', 2);
    const other = log.cursor(4);
    expect(other.next()).toBe(true);
    log.markDeleted(4);
    expect(other.record).toBeUndefined();
    await storage.close();
  });

  test('rolling an empty active segment adds no segment', async () => {
    const log = await (await memoryStorage().namespace('q')).openLog('log', testRecordCodec);
    log.roll();
    log.append('a', 1);
    log.roll();
    log.roll();
    expect(log.segments().map((s) => s.id)).toEqual([1, 2]);
  });
});
