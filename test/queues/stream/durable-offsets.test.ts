/**
 * A stored consumer offset never passes what is durable in the stream's log: after a crash (or
 * a failed write) it points at most at the log's end, so a consumer that resubscribes reads
 * every message published from there on.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { DataLossError, OffsetClampedError } from '../../../src/errors.js';
import type { Message } from '../../../src/message/message.js';
import { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import { type FsIo, fsStorage, nodeIo } from '../../../src/storage/fs/index.js';
import { memoryStorage } from '../../../src/storage/memory.js';
import type { StorageAdapter } from '../../../src/storage/types.js';
import { simulateCrash } from '../../../src/testing/index.js';
import { settle } from './support.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-durable-offsets-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => path.join(root, `t${++n}`);

/** Consumes with `tag`, acking everything, and returns the bodies seen so far. */
async function consumeAll(stream: StreamQueue, tag: string): Promise<string[]> {
  const seen: string[] = [];
  await stream.subscribe({ tag, manualAck: true }, (m: Message) => {
    seen.push(m.bodyString());
    void m.ack();
  });
  for (let i = 0; i < 5; i++) await settle();
  return seen;
}

/** The real file system; segment writes fail with ENOSPC while `full` is set. */
function fillableIo() {
  const segments = new Set<number>();
  const state = { full: false };
  const io: FsIo = {
    ...nodeIo,
    openSync(file, flags) {
      const fd = nodeIo.openSync(file, flags);
      if (/\.seg(\.tmp)?$/.test(file)) segments.add(fd);
      else segments.delete(fd);
      return fd;
    },
    writeSync(fd, buffer, offset, length, position) {
      if (state.full && segments.has(fd)) {
        const error: NodeJS.ErrnoException = new Error('ENOSPC: no space left on device, write');
        error.code = 'ENOSPC';
        throw error;
      }
      return nodeIo.writeSync(fd, buffer, offset, length, position);
    },
  };
  return { io, state };
}

async function reopenAndResume(dir: string, tag: string) {
  const errors: unknown[] = [];
  const storage = fsStorage({ dir });
  const stream = await StreamQueue.open({
    name: 's',
    storage,
    onError: (error) => errors.push(error),
  });
  const next = stream.nextOffset;
  const stored = stream.storedOffset(tag);
  // Producers publish before the consumer comes back.
  await Promise.all(['n1', 'n2', 'n3', 'n4'].map((body) => stream.publish(body)));
  const seen = await consumeAll(stream, tag);
  await stream.close();
  await storage.close();
  return { errors, next, stored, seen };
}

test('a crash while acked messages wait for their fsync leaves the stored offset at the durable end', async () => {
  const dir = freshDir();
  const storage: StorageAdapter = fsStorage({ dir, fsync: { intervalMs: 60_000 } });
  const stream = await StreamQueue.open({ name: 's', storage });
  await stream.publish('a');
  // The next fsync round is an interval away.
  for (const body of ['b', 'c', 'd', 'e']) stream.publish(body).catch(() => {});
  const seen: string[] = [];
  await stream.subscribe({ tag: 'c1', manualAck: true }, (m: Message) => {
    seen.push(m.bodyString());
    void m.ack();
  });
  // The acks are stored (the metadata reached the OS); the messages never did.
  for (let i = 0; i < 3; i++) await settle();
  expect(seen).toEqual(['a', 'b', 'c', 'd', 'e']);
  expect(stream.storedOffset('c1')).toBe(6);
  simulateCrash(storage);

  const { errors, next, stored, seen: resumed } = await reopenAndResume(dir, 'c1');
  expect(stored ?? 1).toBeLessThanOrEqual(next);
  expect(resumed).toEqual(['n1', 'n2', 'n3', 'n4']);
  expect(errors).toEqual([]);
});

test('a failed write of the log (disk full) never lets the stored offset pass what was stored', async () => {
  const dir = freshDir();
  const disk = fillableIo();
  const storage = fsStorage({ dir, fsync: 'always', io: disk.io });
  const stream = await StreamQueue.open({ name: 's', storage });
  await stream.publish('a');
  disk.state.full = true;
  const failed = ['b', 'c', 'd'].map((body) =>
    stream.publish(body).then(
      () => 'stored',
      (error: NodeJS.ErrnoException) => error.code ?? String(error),
    ),
  );
  const seen = await consumeAll(stream, 'c1');
  expect(seen[0]).toBe('a');
  expect(await Promise.all(failed)).toEqual(['MQLITE_STORAGE', 'MQLITE_STORAGE', 'MQLITE_STORAGE']);
  for (let i = 0; i < 3; i++) await settle();
  simulateCrash(storage);

  const { errors, next, stored, seen: resumed } = await reopenAndResume(dir, 'c1');
  expect(next).toBe(2);
  expect(stored ?? 1).toBeLessThanOrEqual(2);
  expect(resumed).toEqual(['n1', 'n2', 'n3', 'n4']);
  expect(errors).toEqual([]);
});

test('reopening on fs continues offsets after a stored offset past the end and reports it', async () => {
  const dir = freshDir();
  const first = await Broker.open({ storage: fsStorage({ dir }) });
  const events = await first.queue('events', { arguments: { 'x-queue-type': 'stream' } });
  await Promise.all(['a', 'b'].map((body) => events.publish(body)));
  await first.close();
  // An offset stored past the end, as a crash of an older version left it.
  const raw = fsStorage({ dir });
  (await raw.namespace('events')).meta.set('stream.offset.audit', 50);
  await raw.close();

  const errors: unknown[] = [];
  const broker = await Broker.open({
    storage: fsStorage({ dir }),
    onError: (error) => errors.push(error),
  });
  expect(errors).toHaveLength(1);
  expect(errors[0]).toBeInstanceOf(DataLossError);
  expect((errors[0] as DataLossError).kind).toBe('reset');
  const stream = await broker.queue('events', { arguments: { 'x-queue-type': 'stream' } });
  expect(stream.storedOffset('audit')).toBe(50);
  await Promise.all(['n1', 'n2'].map((body) => stream.publish(body)));
  expect(await consumeAll(stream, 'audit')).toEqual(['n1', 'n2']);
  await broker.close();
});

test('a storage that cannot move a log on clamps a stored offset past the end and reports it', async () => {
  const storage = memoryStorage();
  (await storage.namespace('events')).meta.set('stream.offset.audit', 50);
  const errors: unknown[] = [];
  const stream = await StreamQueue.open({
    name: 'events',
    storage,
    onError: (error) => errors.push(error),
  });
  expect(errors).toHaveLength(1);
  const error = errors[0] as OffsetClampedError;
  expect(error).toBeInstanceOf(OffsetClampedError);
  expect(error.code).toBe('MQLITE_OFFSET_CLAMPED');
  expect([error.queue, error.tag, error.stored, error.clamped]).toEqual(['events', 'audit', 50, 1]);
  expect(stream.storedOffset('audit')).toBe(1);
  await Promise.all(['n1', 'n2'].map((body) => stream.publish(body)));
  expect(await consumeAll(stream, 'audit')).toEqual(['n1', 'n2']);
  await stream.close();
  await storage.close();
});

test('held progress is stored once the messages before it are durable', async () => {
  const dir = freshDir();
  const storage = fsStorage({ dir, fsync: 'always' });
  const stream = await StreamQueue.open({ name: 's', storage });
  const published = Promise.all(['a', 'b', 'c'].map((body) => stream.publish(body)));
  const seen = await consumeAll(stream, 'c1');
  await published;
  expect(seen).toEqual(['a', 'b', 'c']);
  for (let i = 0; i < 3; i++) await settle();
  expect(stream.storedOffset('c1')).toBe(4);
  await (await storage.namespace('s')).sync();
  simulateCrash(storage);
  const again = fsStorage({ dir });
  const reopened = await StreamQueue.open({ name: 's', storage: again });
  expect(reopened.storedOffset('c1')).toBe(4);
  await reopened.close();
  await again.close();
});
