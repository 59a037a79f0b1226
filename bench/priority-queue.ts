/**
 * PriorityQueue throughput, 100-byte bodies spread over 10 priority levels:
 * - memory: `publish()` (normalize + enqueue), `publishMessage()` of pre-normalized messages (what
 *   a router does; cycled from a pool, see {@link POOL}), then consume-with-ack of everything
 *   through one subscriber;
 * - the ordering and storage layer alone (`LevelStore`: add, shift + settle);
 * - peers doing only the ordering of the same (priority, arrival) keys: heap-js, tinyqueue,
 *   flatqueue, and a bare per-level FIFO of arrays (the floor);
 * - fs with an fsync every 100 ms: publish, then consume-with-ack, each beside the raw level logs
 *   doing the same appends and reads without the queue (what remains is the adapter's);
 * - memory per stored message beyond its body (needs `--expose-gc`).
 *
 * Every figure is the best of a few rounds (`bestOf` in memory; fs phases on fresh storage each).
 *
 * Standalone: `node --expose-gc --import tsx bench/priority-queue.ts` (`BENCH_SCALE=0.1` for a
 * quick run).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import FlatQueue from 'flatqueue';
import { Heap } from 'heap-js';
import TinyQueue from 'tinyqueue';
import { messageCodec } from '../src/message/codec.js';
import { normalizeMessage } from '../src/message/normalize.js';
import type { MessageProperties, StoredMessage } from '../src/message/types.js';
import { LevelStore, levelLogName } from '../src/queues/classic/level-store.js';
import { NO_HANDLE } from '../src/queues/classic/ready-store.js';
import { PriorityQueue } from '../src/queues/priority-queue.js';
import { fsStorage } from '../src/storage/fs/index.js';
import { memoryStorage } from '../src/storage/memory.js';
import type { StorageAdapter } from '../src/storage/types.js';
import { bestOf, isMain, memoryInUse, printResults, publishWindowed, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const MESSAGES = scaled(1_000_000);
const LEVELS = 10;
/** Unconfirmed publishes in flight: memory confirms at once; fs group-commits every 100 ms. */
const MEMORY_WINDOW = 1000;
const FS_WINDOW = 200_000;
const body = new Uint8Array(100).fill(7);
const levelProps: MessageProperties[] = Array.from({ length: LEVELS }, (_, p) => ({ priority: p }));

const gc = (globalThis as { gc?: () => void }).gc;
/** Rounds per figure; the best is kept (the machine is shared). */
const ROUNDS = 3;

/** Publishes `n` messages through `publish` with a sliding window of `window` unconfirmed. */
function publishAll(n: number, window: number, publish: (i: number) => Promise<void>) {
  return publishWindowed(n, publish, { window });
}

/** Consumes everything with one subscriber whose callback returns at once (acked on return). */
function consumeAll(queue: PriorityQueue, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    queue
      .subscribe({ prefetch: 0 }, () => {
        if (++seen === n) setImmediate(resolve);
      })
      .catch(reject);
  });
}

async function openQueue(storage?: StorageAdapter): Promise<PriorityQueue> {
  // Every level opened up front: the first publish to a level awaits its log.
  const queue = await PriorityQueue.open({
    name: 'bench',
    maxPriority: LEVELS - 1,
    ...(storage && { storage }),
  });
  await Promise.all(levelProps.map((p) => queue.publish('warm', p)));
  await queue.purge();
  return queue;
}

/**
 * Pre-normalized messages the throughput figures cycle through, as a router hands them over. A
 * router's message is garbage once enqueued; a million of them held by the bench would only add
 * GC work to the figure (each major GC would mark them all).
 */
const POOL = 10_000;

/** 100-byte messages spread over the levels, normalized as a router hands them over. */
function normalized(n: number): StoredMessage[] {
  return Array.from({ length: n }, (_, i) =>
    normalizeMessage(body, levelProps[i % LEVELS], '', 'bench'),
  );
}

async function memoryQueue(): Promise<BenchResult[]> {
  let queue: PriorityQueue | undefined;
  const fresh = async () => {
    await queue?.close();
    queue = await openQueue();
  };
  const publishEverything = () =>
    publishAll(MESSAGES, MEMORY_WINDOW, (i) => queue!.publish(body, levelProps[i % LEVELS]));
  const publish = await bestOf(MESSAGES, publishEverything, { rounds: ROUNDS, setup: fresh });
  // Filled with publish(): a million messages held by the bench itself would only add GC work.
  const consume = await bestOf(MESSAGES, () => consumeAll(queue!, MESSAGES), {
    rounds: ROUNDS,
    setup: async () => {
      await fresh();
      await publishEverything();
    },
  });
  const messages = normalized(POOL);
  const enqueue = await bestOf(
    MESSAGES,
    () => publishAll(MESSAGES, MEMORY_WINDOW, (i) => queue!.publishMessage(messages[i % POOL]!)),
    { rounds: ROUNDS, setup: fresh },
  );
  await queue?.close();
  return [
    {
      name: 'priority publish (memory)',
      opsPerSec: publish,
      note: 'publish(): normalize + enqueue',
    },
    {
      name: 'priority enqueue (memory)',
      opsPerSec: enqueue,
      note: 'publishMessage()',
      targets: [{ target: '≥ 3 M/s', beside: 'priority store add (memory)' }],
    },
    {
      name: 'priority consume-with-ack (memory)',
      opsPerSec: consume,
      note: 'one subscriber, acked on return',
      targets: [{ target: '≥ 3 M/s', beside: 'priority store shift + settle (memory)' }],
    },
  ];
}

/**
 * The queue's ordering and storage layer alone (`LevelStore` on memory storage): add, then
 * shift + settle (what a delivery and its ack cost below the consumer machinery). This is the
 * figure to set beside the ordering-only peers.
 */
async function levelStore(): Promise<BenchResult[]> {
  const messages = normalized(POOL);
  let store: LevelStore | undefined;
  const fresh = async () => {
    await store?.close();
    store = await LevelStore.open(await memoryStorage().namespace('bench'), {
      maxLevel: LEVELS - 1,
      codec: messageCodec,
      persistent: false,
    });
    for (const props of levelProps) await store.prepare(normalizeMessage('', props, '', 'bench'));
  };
  const addAll = () => {
    for (let i = 0; i < MESSAGES; i++) store!.add(messages[i % POOL]!, 0);
  };
  const add = await bestOf(MESSAGES, addAll, { rounds: ROUNDS, setup: fresh });
  const take = await bestOf(
    MESSAGES,
    () => {
      const s = store!;
      for (let h = s.shift(); h !== NO_HANDLE; h = s.shift()) s.settle(h);
    },
    {
      rounds: ROUNDS,
      setup: async () => {
        await fresh();
        addAll();
      },
    },
  );
  await store?.close();
  return [
    { name: 'priority store add (memory)', opsPerSec: add, note: 'LevelStore, no consumer layer' },
    {
      name: 'priority store shift + settle (memory)',
      opsPerSec: take,
      note: 'LevelStore, no consumer layer',
    },
  ];
}

/** An ordering-only peer: push (priority, arrival) keys, then pop them all. */
interface Peer {
  readonly name: string;
  /** Empties the structure (untimed). */
  reset(): void;
  push(n: number): void;
  /** Pops everything and returns how many came out. */
  pop(): number;
}

interface Item {
  readonly p: number;
  readonly seq: number;
}

const before = (a: Item, b: Item) => b.p - a.p || a.seq - b.seq;

function peerList(): Peer[] {
  let heap = new Heap<Item>(before);
  let tiny = new TinyQueue<Item>([], before);
  let flat = new FlatQueue<number>();
  let levels: Item[][] = [];
  let heads: number[] = [];
  return [
    {
      name: 'heap-js',
      reset: () => {
        heap = new Heap<Item>(before);
      },
      push: (n) => {
        for (let i = 0; i < n; i++) heap.push({ p: i % LEVELS, seq: i });
      },
      pop: () => {
        let k = 0;
        while (heap.pop() !== undefined) k++;
        return k;
      },
    },
    {
      name: 'tinyqueue',
      reset: () => {
        tiny = new TinyQueue<Item>([], before);
      },
      push: (n) => {
        for (let i = 0; i < n; i++) tiny.push({ p: i % LEVELS, seq: i });
      },
      pop: () => {
        let k = 0;
        while (tiny.pop() !== undefined) k++;
        return k;
      },
    },
    {
      name: 'flatqueue',
      reset: () => {
        flat = new FlatQueue<number>();
      },
      // One numeric key: level descending, then arrival.
      push: (n) => {
        for (let i = 0; i < n; i++) flat.push(i, (LEVELS - 1 - (i % LEVELS)) * n + i);
      },
      pop: () => {
        let k = 0;
        while (flat.pop() !== undefined) k++;
        return k;
      },
    },
    {
      name: 'per-level FIFO of arrays (floor)',
      reset: () => {
        levels = Array.from({ length: LEVELS }, () => []);
        heads = new Array<number>(LEVELS).fill(0);
      },
      push: (n) => {
        for (let i = 0; i < n; i++) levels[i % LEVELS]!.push({ p: i % LEVELS, seq: i });
      },
      // One dequeue per message, each finding the highest non-empty level, as a queue does.
      pop: () => {
        let k = 0;
        let top = LEVELS - 1;
        for (;;) {
          while (top >= 0 && heads[top]! === levels[top]!.length) top--;
          if (top < 0) return k;
          levels[top]![heads[top]!++] = undefined as unknown as Item;
          k++;
        }
      },
    },
  ];
}

/** The ordering alone, best of `ROUNDS` like the queue figures. */
async function peers(): Promise<BenchResult[]> {
  const n = MESSAGES;
  const results: BenchResult[] = [];
  for (const peer of peerList()) {
    const push = await bestOf(n, () => peer.push(n), { rounds: ROUNDS, setup: peer.reset });
    const pop = await bestOf(
      n,
      () => {
        const popped = peer.pop();
        if (popped !== n) throw new Error(`${peer.name} popped ${popped}`);
      },
      {
        rounds: ROUNDS,
        setup: () => {
          peer.reset();
          peer.push(n);
        },
      },
    );
    peer.reset();
    results.push({ name: `${peer.name} push`, opsPerSec: push, note: 'ordering only' });
    results.push({ name: `${peer.name} pop`, opsPerSec: pop, note: 'ordering only' });
  }
  return results;
}

/** One fs phase, timed once: the caller runs it on fresh storage each round. */
async function timed(n: number, fn: () => Promise<unknown>): Promise<number> {
  gc?.();
  const start = performance.now();
  await fn();
  return (n / (performance.now() - start)) * 1000;
}

/** Runs `fn` on a fresh fs storage (fsync every 100 ms) in a directory removed afterwards. */
async function onFs<R>(fn: (storage: StorageAdapter) => Promise<R>): Promise<R> {
  const dir = mkdtempSync(join(tmpdir(), 'mqlite-bench-pq-'));
  const storage = fsStorage({ dir, fsync: { intervalMs: 100 } });
  try {
    return await fn(storage);
  } finally {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The raw fs logs under the queue: one log per level, appending the same pre-normalized
 * messages with the same window of unconfirmed appends, then reading every record in delivery order
 * (highest level first) and marking it deleted. What the queue adds is the difference to
 * `publishMessage()` and consume-with-ack on the queue.
 */
function fsRawLogs(messages: StoredMessage[]): Promise<[number, number]> {
  return onFs(async (storage) => {
    const ns = await storage.namespace('raw');
    const logs = await Promise.all(
      levelProps.map((_, level) => ns.openLog(levelLogName(level), messageCodec)),
    );
    const n = MESSAGES;
    let now = Date.now();
    const append = await timed(n, () =>
      publishAll(n, FS_WINDOW, (j) => {
        // The clock read once per batch, as the queue reads it once per tick.
        if (j % 1000 === 0) now = Date.now();
        const log = logs[j % LEVELS]!;
        log.append(messages[j % POOL]!, now);
        return log.sync();
      }),
    );
    const consume = await timed(n, async () => {
      let bytes = 0;
      for (let level = LEVELS - 1; level >= 0; level--) {
        const log = logs[level]!;
        const cursor = log.cursor(log.firstOffset);
        while (cursor.next()) {
          bytes += cursor.record.body.byteLength;
          log.markDeleted(cursor.offset);
        }
      }
      await Promise.all(logs.map((log) => log.sync()));
      if (bytes !== n * body.byteLength) throw new Error(`read ${bytes} bytes`);
    });
    return [append, consume];
  });
}

/** Publish, enqueue, raw append, consume, raw consume: messages per second. */
type FsFigures = [number, number, number, number, number];

async function fsQueue(): Promise<BenchResult[]> {
  const messages = normalized(POOL);
  // Rounds interleave the queue with the raw logs under it, so both see the same load.
  const best: FsFigures = [0, 0, 0, 0, 0];
  for (let round = 0; round < ROUNDS; round++) {
    const figures = await fsRound(messages);
    figures.forEach((figure, i) => {
      best[i] = Math.max(best[i]!, figure);
    });
  }
  return fsResults(best);
}

/** One round of every fs phase, each on fresh storage, in {@link FsFigures} order. */
async function fsRound(messages: StoredMessage[]): Promise<FsFigures> {
  const [rawAppend, rawConsume] = await fsRawLogs(messages);
  const [enqueue, consume] = await onFs(async (storage) => {
    const queue = await openQueue(storage);
    const enqueued = await timed(MESSAGES, () =>
      publishAll(MESSAGES, FS_WINDOW, (i) => queue.publishMessage(messages[i % POOL]!)),
    );
    const consumed = await timed(MESSAGES, async () => {
      await consumeAll(queue, MESSAGES);
      await queue.close();
    });
    return [enqueued, consumed];
  });
  const publish = await onFs(async (storage) => {
    const queue = await openQueue(storage);
    const published = await timed(MESSAGES, () =>
      publishAll(MESSAGES, FS_WINDOW, (i) => queue.publish(body, levelProps[i % LEVELS])),
    );
    await queue.close();
    return published;
  });
  return [publish, enqueue, rawAppend, consume, rawConsume];
}

function fsResults([publish, enqueue, rawAppend, consume, rawConsume]: FsFigures): BenchResult[] {
  return [
    {
      name: 'priority publish (fs, fsync 100 ms)',
      opsPerSec: publish,
      note: 'publish()',
      targets: [{ target: '≥ 1 M/s', beside: 'raw fs level logs append + sync (fsync 100 ms)' }],
    },
    {
      name: 'priority enqueue (fs, fsync 100 ms)',
      opsPerSec: enqueue,
      note: 'publishMessage() of pre-normalized messages',
    },
    {
      name: 'raw fs level logs append + sync (fsync 100 ms)',
      opsPerSec: rawAppend,
      note: 'the same messages without the queue: the adapter alone',
    },
    {
      name: 'priority consume-with-ack (fs, fsync 100 ms)',
      opsPerSec: consume,
      targets: [
        { target: '≥ 500 k/s', beside: 'raw fs level logs read + markDeleted (fsync 100 ms)' },
      ],
    },
    {
      name: 'raw fs level logs read + markDeleted (fsync 100 ms)',
      opsPerSec: rawConsume,
      note: 'the same records without the queue: the adapter alone',
    },
  ];
}

const used = async () => (await memoryInUse())!;

/**
 * Bytes per stored message beyond its 100-byte body, after GC: in total (the stored message as
 * `publish()` builds it, plus the queue's own structures), and the queue's own share (messages
 * normalized and held beforehand, so only what the queue adds per message counts).
 */
async function memoryPerMessage(): Promise<BenchResult[]> {
  if (!gc) return [];
  const n = Math.min(MESSAGES, 500_000);
  const queue = await openQueue();
  let before = await used();
  await publishAll(n, MEMORY_WINDOW, (i) => queue.publish(body, levelProps[i % LEVELS]));
  const total = ((await used()) - before) / n - body.byteLength;
  await queue.close();

  const messages = normalized(n);
  const queue2 = await openQueue();
  before = await used();
  await publishAll(n, MEMORY_WINDOW, (i) => queue2.publishMessage(messages[i]!));
  const own = ((await used()) - before) / n;
  await queue2.close();
  return [
    {
      name: 'priority memory per message, total',
      opsPerSec: total,
      note: 'bytes beyond the 100-byte body (not a rate)',
      unit: 'bytes',
      targets: [{ target: '≤ 64 B' }],
    },
    {
      name: 'priority memory per message, queue structures',
      opsPerSec: own,
      note: 'bytes the queue adds to an already built message (not a rate)',
      unit: 'bytes',
    },
  ];
}

export async function run(): Promise<BenchResult[]> {
  return [
    ...(await memoryQueue()),
    ...(await levelStore()),
    ...(await peers()),
    ...(await fsQueue()),
    ...(await memoryPerMessage()),
  ];
}

if (isMain(import.meta.url)) printResults(await run());
