import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { normalizeMessage } from '../../../src/message/normalize.js';
import type { FieldValue, StoredMessage } from '../../../src/message/types.js';
import { storeInconsistency } from '../../../src/queues/classic/consistency.js';
import { NO_HANDLE } from '../../../src/queues/classic/ready-store.js';
import { ConflatingStore } from '../../../src/queues/lvq/conflating-store.js';
import { lvqKey } from '../../../src/queues/lvq/key.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import type { RecordCodec } from '../../../src/storage/types.js';

/** The memory adapter only asks a codec for byte lengths. */
const codec: RecordCodec<StoredMessage> = {
  byteLength: (m) => m.body.byteLength,
  encode: () => {
    throw new Error('not persistent');
  },
  decode: () => {
    throw new Error('not persistent');
  },
};

async function openStore(): Promise<ConflatingStore> {
  const ns = await memoryStorage().namespace('prices');
  return ConflatingStore.open(ns, { key: 'k', codec, persistent: false });
}

function msg(body: string, key?: FieldValue): StoredMessage {
  return normalizeMessage(body, key === undefined ? {} : { headers: { k: key } }, '', 'prices');
}

function readyBodies(store: ConflatingStore): string[] {
  return [...store.ready()].map((h) => new TextDecoder().decode(store.message(h).body));
}

function currentBodies(store: ConflatingStore): string[] {
  const out: string[] = [];
  const cursor = store.current();
  while (cursor.next()) out.push(new TextDecoder().decode(cursor.message.body));
  return out;
}

describe('a conflating store', () => {
  test('replacing a key moves its latest value to the tail: keys 1 2 3 4 2 1 leave 3 4 2 1', async () => {
    const store = await openStore();
    for (const k of [1, 2, 3, 4, 2, 1]) store.add(msg(`v${k}`, k), 0);
    expect(readyBodies(store)).toEqual(['v3', 'v4', 'v2', 'v1']);
    expect(store.readyCount).toBe(4);
    expect(store.keyCount).toBe(4);
  });

  test('delivers in queue order and keeps the newest body of each key', async () => {
    const store = await openStore();
    store.add(msg('a1', 'a'), 0);
    store.add(msg('b1', 'b'), 0);
    store.add(msg('a2', 'a'), 0);
    const first = store.shift();
    expect(new TextDecoder().decode(store.message(first).body)).toBe('b1');
    const second = store.shift();
    expect(new TextDecoder().decode(store.message(second).body)).toBe('a2');
    expect(store.shift()).toBe(NO_HANDLE);
  });

  test('keys compare by type and value: "3" and 3 are different keys', async () => {
    const store = await openStore();
    store.add(msg('string', '3'), 0);
    store.add(msg('number', 3), 0);
    store.add(msg('bigint', 3n), 0);
    store.add(msg('boolean', true), 0);
    store.add(msg('string "true"', 'true'), 0);
    expect(store.readyCount).toBe(5);
    store.add(msg('number again', 3), 0);
    expect(readyBodies(store)).toEqual([
      'string',
      'bigint',
      'boolean',
      'string "true"',
      'number again',
    ]);
  });

  test('object keys compare by their stable JSON rendering', async () => {
    const store = await openStore();
    store.add(msg('first', { isin: 'US1', venue: 'X' }), 0);
    store.add(msg('second', { venue: 'X', isin: 'US1' }), 0);
    store.add(msg('array', ['US1', 'X']), 0);
    store.add(msg('json text', '{"isin":"US1","venue":"X"}'), 0);
    expect(readyBodies(store)).toEqual(['second', 'array', 'json text']);
  });

  test('dates, byte arrays and nested bigints are keys too', async () => {
    expect(lvqKey(new Date(5))).toBe(lvqKey(new Date(5)));
    expect(lvqKey(new Date(5))).not.toBe(lvqKey(new Date(6)));
    expect(lvqKey(new Uint8Array([1, 2]))).toBe(lvqKey(new Uint8Array([1, 2])));
    expect(lvqKey(new Uint8Array([1, 2]))).not.toBe(lvqKey({ 0: 1, 1: 2 }));
    expect(lvqKey({ n: 1n })).toBe(lvqKey({ n: 1n }));
    expect(lvqKey({ n: 1n })).not.toBe(lvqKey({ n: 2n }));
    expect(lvqKey('\u0000sx')).not.toBe(lvqKey('\u0000\u0000sx'));
  });

  test('messages without the key header (or with null) are plain FIFO entries', async () => {
    const store = await openStore();
    store.add(msg('x1'), 0);
    store.add(msg('a1', 'a'), 0);
    store.add(msg('x2', null), 0);
    store.add(msg('x3'), 0);
    store.add(msg('a2', 'a'), 0);
    expect(readyBodies(store)).toEqual(['x1', 'x2', 'x3', 'a2']);
    expect(store.keyCount).toBe(1);
  });

  test('a delivered value is not replaced: both exist until it is acked', async () => {
    const store = await openStore();
    const old = store.add(msg('a1', 'a'), 0);
    expect(store.shift()).toBe(old);
    store.add(msg('a2', 'a'), 0);
    expect(store.inFlightCount).toBe(1);
    expect(store.readyCount).toBe(1);
    store.settle(old);
    expect(store.inFlightCount).toBe(0);
    expect(readyBodies(store)).toEqual(['a2']);
    expect(new TextDecoder().decode(store.latest('a')!.body)).toBe('a2');
  });

  test('a released value that a newer one superseded is discarded, not requeued', async () => {
    const store = await openStore();
    const old = store.add(msg('a1', 'a'), 0);
    store.shift();
    store.add(msg('a2', 'a'), 0);
    expect(store.requeue(old)).toBe(false);
    expect(store.inFlightCount).toBe(0);
    expect(store.isReady(old)).toBe(false);
    expect(readyBodies(store)).toEqual(['a2']);
    expect(store.keyCount).toBe(1);
  });

  test('a released value that is still the latest returns to its original position', async () => {
    const store = await openStore();
    const a = store.add(msg('a1', 'a'), 0);
    store.add(msg('b1', 'b'), 0);
    store.shift();
    store.add(msg('c1', 'c'), 0);
    expect(store.requeue(a)).toBe(true);
    expect(readyBodies(store)).toEqual(['a1', 'b1', 'c1']);
    // Once requeued it is ready again, so a newer value replaces it at once.
    store.add(msg('a2', 'a'), 0);
    expect(readyBodies(store)).toEqual(['b1', 'c1', 'a2']);
  });

  test('tells its owner about every ready value a newer one displaces, requeued ones included', async () => {
    const store = await openStore();
    const displaced: number[] = [];
    store.onDisplaced = (handle) => displaced.push(handle);
    const a = store.add(msg('a1', 'a'), 0);
    store.shift();
    expect(store.requeue(a)).toBe(true);
    const b = store.add(msg('b1', 'b'), 0);
    store.add(msg('a2', 'a'), 0);
    store.add(msg('b2', 'b'), 0);
    // The queue forgets what it tracked for these (their delivery counts): nothing leaks.
    expect(displaced).toEqual([a, b]);
  });

  test('removing a ready value (expiry, length limit) forgets its key', async () => {
    const store = await openStore();
    const a = store.add(msg('a1', 'a'), 0);
    store.add(msg('b1', 'b'), 0);
    store.remove(a);
    expect(store.latest('a')).toBeUndefined();
    expect(store.keyCount).toBe(1);
    expect(readyBodies(store)).toEqual(['b1']);
  });

  test('counts ready and in-flight bytes', async () => {
    const store = await openStore();
    store.add(msg('aaaa', 'a'), 0);
    store.add(msg('bb', 'b'), 0);
    store.add(msg('aaaaaa', 'a'), 0);
    expect(store.readyBytes).toBe(8);
    store.shift();
    expect(store.readyBytes).toBe(6);
    expect(store.inFlightBytes).toBe(2);
  });

  test('purge removes every ready value and keeps the in-flight ones', async () => {
    const store = await openStore();
    const a = store.add(msg('a1', 'a'), 0);
    store.shift();
    store.add(msg('b1', 'b'), 0);
    store.add(msg('x'), 0);
    expect(store.purge()).toBe(2);
    expect(store.readyCount).toBe(0);
    expect(store.keyCount).toBe(1);
    expect(store.requeue(a)).toBe(true);
    expect(readyBodies(store)).toEqual(['a1']);
  });

  test('reopening rebuilds the key map from the live records', async () => {
    const storage = memoryStorage();
    const first = await ConflatingStore.open(await storage.namespace('q'), {
      key: 'k',
      codec,
      persistent: false,
    });
    for (let i = 0; i < 100; i++) first.add(msg(`v${i}`, i % 3), i);
    first.add(msg('plain'), 100);
    const delivered = first.shift();
    await first.close();
    const second = await ConflatingStore.open(await storage.namespace('q'), {
      key: 'k',
      codec,
      persistent: false,
    });
    expect(readyBodies(second)).toEqual(['v97', 'v98', 'v99', 'plain']);
    expect(second.keyCount).toBe(3);
    expect(second.deliveredBeforeOpen(delivered)).toBe(true);
    expect(second.timestamp(second.peek())).toBe(97);
    second.add(msg('v100', 97 % 3), 101);
    expect(readyBodies(second)).toEqual(['v98', 'v99', 'plain', 'v100']);
  });

  test('the current values skip superseded ones and include in-flight latest ones', async () => {
    const store = await openStore();
    store.add(msg('a1', 'a'), 0);
    store.add(msg('b1', 'b'), 0);
    const cursor = store.current();
    expect(cursor.next()).toBe(true);
    store.shift(); // a1 in flight, still the latest
    store.add(msg('b2', 'b'), 0); // b1 replaced before the cursor reached it
    store.add(msg('x'), 0);
    const seen = [new TextDecoder().decode(cursor.message.body)];
    while (cursor.next()) seen.push(new TextDecoder().decode(cursor.message.body));
    expect(seen).toEqual(['a1', 'b2', 'x']);
    expect(cursor.next()).toBe(false);
    store.add(msg('a2', 'a'), 0);
    expect(cursor.next()).toBe(true);
    expect(new TextDecoder().decode(cursor.message.body)).toBe('a2');
    expect(currentBodies(store)).toEqual(['b2', 'x', 'a2']);
  });

  test('many replacements of a few keys keep the store small and in order', async () => {
    const store = await openStore();
    const messages = Array.from({ length: 10 }, (_, k) => msg(`v${k}`, k));
    for (let i = 0; i < 50_000; i++) store.add(messages[i % 10]!, i);
    expect(store.readyCount).toBe(10);
    expect(readyBodies(store)).toEqual(messages.map((_, k) => `v${k}`));
  });

  test('delivers in arrival order across long runs of removed messages', async () => {
    const store = await openStore();
    const handles = Array.from({ length: 2000 }, (_, i) => store.add(msg(`m${i}`), 0));
    for (const handle of handles.slice(100, 1900)) store.remove(handle);
    const expected = [...handles.keys()].filter((i) => i < 100 || i >= 1900).map((i) => `m${i}`);
    expect(readyBodies(store)).toEqual(expected);
    const shifted: string[] = [];
    for (let h = store.shift(); h !== NO_HANDLE; h = store.shift()) {
      shifted.push(new TextDecoder().decode(store.message(h).body));
    }
    expect(shifted).toEqual(expected);
    store.add(msg('late'), 0);
    expect(readyBodies(store)).toEqual(['late']);
  });

  test('a store drained as fast as it is filled keeps arrival order', async () => {
    const store = await openStore();
    for (let i = 0; i < 1000; i++) {
      store.add(msg(`m${i}`), 0);
      const handle = store.shift();
      expect(new TextDecoder().decode(store.message(handle).body)).toBe(`m${i}`);
      store.settle(handle);
    }
    expect(store.shift()).toBe(NO_HANDLE);
    for (let i = 0; i < 300; i++) store.add(msg(`n${i}`), 0);
    expect(readyBodies(store)).toEqual(Array.from({ length: 300 }, (_, i) => `n${i}`));
  });

  test('arrival times and sizes stay right while table pages are released and reused', async () => {
    const store = await openStore();
    const latest = new Map<number, { handle: number; i: number }>();
    for (let i = 0; i < 5000; i++) {
      const key = i % 300;
      latest.set(key, { handle: store.add(msg('x'.repeat(1 + (i % 7)), key), 1000 + i), i });
    }
    let bytes = 0;
    for (const { handle, i } of latest.values()) {
      expect(store.timestamp(handle)).toBe(1000 + i);
      expect(store.message(handle).body.byteLength).toBe(1 + (i % 7));
      bytes += 1 + (i % 7);
    }
    expect(store.readyBytes).toBe(bytes);
  });

  test('a handle asked for before it existed is found once stored', async () => {
    const store = await openStore();
    expect(() => store.message(300)).toThrow(RangeError);
    expect(store.isReady(300)).toBe(false);
    for (let i = 1; i <= 400; i++) expect(store.add(msg(`m${i}`), 0)).toBe(i);
    expect(store.isReady(300)).toBe(true);
    expect(new TextDecoder().decode(store.message(300).body)).toBe('m300');
  });

  test('a message stored after every other one of its table page went is found', async () => {
    const store = await openStore();
    const first = store.add(msg('a', 'k'), 0);
    store.remove(first);
    const second = store.add(msg('b', 'k'), 0);
    expect(store.isReady(first)).toBe(false);
    expect(new TextDecoder().decode(store.message(second).body)).toBe('b');
    expect(readyBodies(store)).toEqual(['b']);
    expect(new TextDecoder().decode(store.latest('k')!.body)).toBe('b');
  });

  test('refuses to settle or requeue a ready message and to remove an unacked one, its counts unchanged', async () => {
    const store = await openStore();
    const a = store.add(msg('a', 1), 0);
    const b = store.add(msg('b', 2), 0);
    expect(store.shift()).toBe(a);
    expect(() => store.settle(b)).toThrow(RangeError);
    expect(() => store.requeue(b)).toThrow(RangeError);
    expect(() => store.remove(a)).toThrow(RangeError);
    store.settle(a);
    expect(() => store.settle(a)).toThrow(RangeError);
    expect([store.readyCount, store.inFlightCount]).toEqual([1, 0]);
    expect(storeInconsistency(store)).toBeUndefined();
  });

  test('matches a reference model under any sequence of operations', async () => {
    type Op =
      | { op: 'add'; key: number | null }
      | { op: 'burst' }
      | { op: 'shift' }
      | { op: 'requeue'; pick: number }
      | { op: 'settle'; pick: number }
      | { op: 'remove'; pick: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        op: fc.constant('add' as const),
        key: fc.option(fc.integer({ min: 0, max: 4 })),
      }),
      fc.record({ op: fc.constant('shift' as const) }),
      // Enough replacements to release and reuse table pages (rarely: it is slow to check).
      { arbitrary: fc.record({ op: fc.constant('burst' as const) }), weight: 1 },
      { arbitrary: fc.record({ op: fc.constant('requeue' as const), pick: fc.nat() }), weight: 20 },
      { arbitrary: fc.record({ op: fc.constant('settle' as const), pick: fc.nat() }), weight: 20 },
      { arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }), weight: 20 },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), async (ops) => {
        const store = await openStore();
        // The model: stored messages by id with their key and state, in arrival order.
        const model: { id: number; key: number | null; state: 'ready' | 'flight' | 'stale' }[] = [];
        const handles = new Map<number, number>();
        let nextId = 0;
        const expanded = ops.flatMap((o): Op[] =>
          o.op === 'burst'
            ? Array.from({ length: 1500 }, (_, i) => ({ op: 'add', key: i % 2 }))
            : [o],
        );
        for (const o of expanded) {
          if (o.op === 'burst') continue;
          if (o.op === 'add') {
            const id = nextId++;
            for (const m of model) {
              if (o.key === null || m.key !== o.key) continue;
              if (m.state === 'flight') m.state = 'stale';
            }
            for (let i = model.length - 1; i >= 0; i--) {
              if (o.key !== null && model[i]!.key === o.key && model[i]!.state === 'ready') {
                model.splice(i, 1);
              }
            }
            model.push({ id, key: o.key, state: 'ready' });
            handles.set(id, store.add(msg(String(id), o.key ?? undefined), 0));
          } else if (o.op === 'shift') {
            const m = model.find((x) => x.state === 'ready');
            const h = store.shift();
            if (m === undefined) expect(h).toBe(NO_HANDLE);
            else {
              expect(h).toBe(handles.get(m.id));
              m.state = 'flight';
            }
          } else {
            const candidates =
              o.op === 'remove'
                ? model.filter((x) => x.state === 'ready')
                : model.filter((x) => x.state !== 'ready');
            if (candidates.length === 0) continue;
            const m = candidates[o.pick % candidates.length]!;
            const h = handles.get(m.id)!;
            if (o.op === 'requeue') {
              expect(store.requeue(h)).toBe(m.state === 'flight');
              if (m.state === 'flight') m.state = 'ready';
              else model.splice(model.indexOf(m), 1);
            } else {
              if (o.op === 'settle') store.settle(h);
              else store.remove(h);
              model.splice(model.indexOf(m), 1);
            }
          }
          if (o.op === 'add' && expanded.length > 100 && nextId % 97 !== 0) continue;
          const ready = model.filter((x) => x.state === 'ready').map((x) => String(x.id));
          expect(storeInconsistency(store)).toBeUndefined();
          expect(readyBodies(store)).toEqual(ready);
          expect(store.readyCount).toBe(ready.length);
          expect(store.readyBytes).toBe(ready.reduce((sum, body) => sum + body.length, 0));
          expect(store.inFlightCount).toBe(model.length - ready.length);
          expect(currentBodies(store)).toEqual(
            model.filter((x) => x.state !== 'stale').map((x) => String(x.id)),
          );
        }
      }),
      { numRuns: 300 },
    );
  });
});
