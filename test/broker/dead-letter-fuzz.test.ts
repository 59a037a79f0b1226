import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { BrokerSession } from '../../src/broker/session.js';
import { QueueFullError } from '../../src/errors.js';
import type { Message } from '../../src/message/message.js';
import type { ClassicQueue } from '../../src/queues/classic/classic-queue.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

/** One queue of a loop: its limit, overflow mode and TTL (undefined: none). */
interface LoopQueue {
  readonly maxLength: number | undefined;
  readonly maxLengthBytes: number | undefined;
  readonly overflow: 'drop-head' | 'reject-publish' | 'reject-publish-dlx';
  readonly messageTtl: number | undefined;
}

type Op =
  | { op: 'publish'; queue: number; expiration: number | undefined }
  | { op: 'get'; queue: number }
  | { op: 'settle'; pick: number; how: 'ack' | 'requeue' | 'reject' | 'requeue-all' }
  | { op: 'consume'; queue: number; prefetch: number }
  | { op: 'close-session' }
  | { op: 'advance'; ms: number }
  | { op: 'limit'; queue: number; maxLength: number }
  | { op: 'reopen' };

const loopQueue: fc.Arbitrary<LoopQueue> = fc.record({
  maxLength: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  maxLengthBytes: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined, freq: 4 }),
  overflow: fc.constantFrom('drop-head', 'drop-head', 'reject-publish', 'reject-publish-dlx'),
  messageTtl: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined, freq: 2 }),
});

const queueIndex = fc.nat(2);
const operation: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('publish' as const),
      queue: queueIndex,
      expiration: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('get' as const), queue: queueIndex }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      pick: fc.nat(),
      how: fc.constantFrom('ack' as const, 'requeue' as const, 'reject' as const, 'requeue-all'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('consume' as const),
      queue: queueIndex,
      prefetch: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('close-session' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: 40 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reopen' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('limit' as const),
      queue: queueIndex,
      maxLength: fc.integer({ min: 0, max: 2 }),
    }),
  },
);

/** A fresh directory for fs storage, removed when disposed; none for memory storage. */
async function dataDir(kind: 'memory' | 'fs') {
  const dir = kind === 'fs' ? await mkdtemp(path.join(tmpdir(), 'mqlite-dl-fuzz-')) : undefined;
  return {
    path: dir,
    [Symbol.asyncDispose]: () =>
      dir === undefined ? Promise.resolve() : rm(dir, { recursive: true, force: true }),
  };
}

/** Lets microtasks and immediates run (requeued messages go out on the next macrotask). */
function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

const unhandled: unknown[] = [];
const onUnhandled = (error: unknown) => unhandled.push(error);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtException', onUnhandled);
});

test.each([
  ['memory', 150],
  ['fs', 25],
] as const)(
  'loops of length-limited queues that dead-letter to each other keep every count whole under any operations (%s storage)',
  async (kind, numRuns) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(loopQueue, { minLength: 2, maxLength: 3 }),
        fc.array(operation, { maxLength: 30 }),
        async (topology, ops) => {
          unhandled.length = 0;
          const clock = new ManualClock();
          const errors: unknown[] = [];
          await using dir = await dataDir(kind);
          const open = async () => {
            const opened = await Broker.open({
              clock,
              onError: (e) => errors.push(e),
              ...(dir.path !== undefined && {
                storage: fsStorage({ dir: dir.path, fsync: 'never' }),
              }),
            });
            const names = topology.map((_, i) => `q${i}`);
            const declared: ClassicQueue[] = [];
            for (const [i, q] of topology.entries()) {
              declared.push(
                (await opened.queue(names[i]!, {
                  durable: dir.path !== undefined,
                  ...(q.maxLength !== undefined && { maxLength: q.maxLength }),
                  ...(q.maxLengthBytes !== undefined && { maxLengthBytes: q.maxLengthBytes }),
                  ...(q.messageTtl !== undefined && { messageTtl: q.messageTtl }),
                  overflow: q.overflow,
                  deadLetterExchange: '',
                  deadLetterRoutingKey: names[(i + 1) % names.length]!,
                })) as ClassicQueue,
              );
            }
            return { broker: opened, queues: declared };
          };
          let { broker, queues } = await open();
          try {
            const held: Message[] = [];
            let session: BrokerSession = broker.session();
            let n = 0;
            for (const o of ops) {
              const queue =
                queues[
                  o.op === 'publish' || o.op === 'get' || o.op === 'consume' || o.op === 'limit'
                    ? o.queue % queues.length
                    : 0
                ]!;
              switch (o.op) {
                case 'publish':
                  await queue
                    .publish(
                      `m${n++}`,
                      o.expiration === undefined ? {} : { expiration: String(o.expiration) },
                    )
                    .catch((error: unknown) => {
                      if (!(error instanceof QueueFullError)) throw error;
                    });
                  break;
                case 'get': {
                  const m = await queue.get({ noAck: false });
                  if (m) held.push(m);
                  break;
                }
                case 'settle': {
                  if (held.length === 0) break;
                  const [m] = held.splice(o.pick % held.length, 1);
                  if (o.how === 'ack') await m!.ack();
                  else if (o.how === 'reject') await m!.reject(false);
                  else await m!.nack(true, o.how === 'requeue-all');
                  break;
                }
                case 'consume': {
                  const q = (await session.queue(queue.name, { passive: true })) as ClassicQueue;
                  await q.subscribe({ prefetch: o.prefetch, manualAck: true }, () => {});
                  break;
                }
                case 'close-session':
                  await session.close();
                  session = broker.session();
                  break;
                case 'advance':
                  clock.advance(o.ms);
                  break;
                case 'limit':
                  await queue.applyLimits({ ...queue.limits, maxLength: o.maxLength });
                  break;
                case 'reopen':
                  // A restart: unacked messages are ready again, whatever expired goes on.
                  if (dir.path === undefined) break;
                  await broker.close();
                  held.length = 0;
                  ({ broker, queues } = await open());
                  session = broker.session();
                  break;
              }
              await tick();
              for (const q of queues) q.assertConsistent();
            }
            // Everything still held goes back; then ready + unacked is what a drain takes.
            for (const m of held.splice(0)) if (!m.isAcked) await m.nack(true).catch(() => {});
            await session.close();
            await tick();
            for (const q of queues) {
              q.assertConsistent();
              const { messages, messagesUnacknowledged } = q.stats();
              expect(messagesUnacknowledged).toBe(0);
              let drained = 0;
              while ((await q.get()) !== null) drained++;
              expect(drained).toBe(messages);
            }
          } finally {
            await broker.close();
          }
          expect(errors).toEqual([]);
          expect(unhandled).toEqual([]);
        },
      ),
      { numRuns },
    );
  },
);
