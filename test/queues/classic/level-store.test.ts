import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { messageCodec } from '../../../src/message/codec.js';
import { normalizeMessage } from '../../../src/message/normalize.js';
import { storeInconsistency } from '../../../src/queues/classic/consistency.js';
import { LevelStore } from '../../../src/queues/classic/level-store.js';
import { NO_HANDLE } from '../../../src/queues/classic/ready-store.js';
import { memoryStorage } from '../../../src/storage/memory.js';

async function openStore(maxLevel = 0): Promise<LevelStore> {
  const ns = await memoryStorage().namespace('q');
  return LevelStore.open(ns, { maxLevel, codec: messageCodec, persistent: false });
}

/** Adds a message of `priority` (preparing its level first). */
async function add(store: LevelStore, body: string, priority = 0): Promise<number> {
  const message = normalizeMessage(body, { priority }, '', 'q');
  await store.prepare(message);
  return store.add(message, 0);
}

function readyBodies(store: LevelStore): string[] {
  return [...store.ready()].map((h) => new TextDecoder().decode(store.message(h).body));
}

describe('a level store', () => {
  test('refuses to remove a message twice, its counts unchanged', async () => {
    const store = await openStore();
    const a = await add(store, 'a');
    await add(store, 'b');
    store.remove(a);
    expect(() => store.remove(a)).toThrow(RangeError);
    expect([store.readyCount, store.readyBytes]).toEqual([1, 1]);
    expect(readyBodies(store)).toEqual(['b']);
    expect(storeInconsistency(store)).toBeUndefined();
  });

  test('refuses to remove an unacked message or requeue a ready one, its counts unchanged', async () => {
    const store = await openStore();
    await add(store, 'a');
    const b = await add(store, 'b');
    const a = store.shift();
    expect(() => store.remove(a)).toThrow(RangeError);
    expect(() => store.requeue(b)).toThrow(RangeError);
    store.requeue(a);
    expect(() => store.requeue(a)).toThrow(RangeError);
    expect([store.readyCount, store.inFlightCount]).toEqual([2, 0]);
    expect(readyBodies(store)).toEqual(['a', 'b']);
    expect(storeInconsistency(store)).toBeUndefined();
  });

  test('keeps its counts consistent and its order under any sequence of operations', async () => {
    type Op =
      | { op: 'add'; priority: number }
      | { op: 'shift' }
      | { op: 'requeue' | 'settle' | 'remove'; pick: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constant('add' as const), priority: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ op: fc.constant('shift' as const) }),
      fc.record({
        op: fc.constantFrom('requeue' as const, 'settle' as const, 'remove' as const),
        pick: fc.nat(),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 60 }), async (ops) => {
        const store = await openStore(2);
        // The model: messages by id with their priority and state, in arrival order.
        const model: { id: number; priority: number; ready: boolean; handle: number }[] = [];
        let nextId = 0;
        const inOrder = () =>
          model
            .filter((m) => m.ready)
            .sort((x, y) => y.priority - x.priority || x.id - y.id)
            .map((m) => String(m.id));
        for (const o of ops) {
          if (o.op === 'add') {
            const id = nextId++;
            const handle = await add(store, String(id), o.priority);
            model.push({ id, priority: o.priority, ready: true, handle });
          } else if (o.op === 'shift') {
            const next = inOrder()[0];
            const handle = store.shift();
            if (next === undefined) expect(handle).toBe(NO_HANDLE);
            else {
              const m = model.find((x) => String(x.id) === next)!;
              expect(handle).toBe(m.handle);
              m.ready = false;
            }
          } else {
            const candidates = model.filter((x) => x.ready === (o.op === 'remove'));
            if (candidates.length === 0) continue;
            const m = candidates[o.pick % candidates.length]!;
            if (o.op === 'requeue') {
              store.requeue(m.handle);
              m.ready = true;
            } else {
              if (o.op === 'settle') store.settle(m.handle);
              else store.remove(m.handle);
              model.splice(model.indexOf(m), 1);
            }
          }
          expect(storeInconsistency(store)).toBeUndefined();
          expect(readyBodies(store)).toEqual(inOrder());
          expect(store.inFlightCount).toBe(model.filter((m) => !m.ready).length);
        }
      }),
      { numRuns: 200 },
    );
  });
});
