import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { type FsIo, fsStorage, nodeIo } from '../../src/storage/fs/index.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-many-queues-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true, maxRetries: 5 }));

/** What the adapter asked of the file system: bytes written, files created, names looked up. */
interface Work {
  written: number;
  created: number;
  opened: number;
  /** Files opened to be read, a missing one too (looking it up is the cost). */
  read: number;
  listed: number;
}

/** The real file operations, counted; `reads` lists the files opened to be read, in order. */
function countingIo(): { io: FsIo; work: Work; reads: string[] } {
  const work: Work = { written: 0, created: 0, opened: 0, read: 0, listed: 0 };
  const reads: string[] = [];
  const io: FsIo = {
    ...nodeIo,
    openSync(file, flags) {
      work.opened++;
      if (flags.startsWith('w')) work.created++;
      if (flags === 'r') {
        work.read++;
        reads.push(file);
      }
      return nodeIo.openSync(file, flags);
    },
    writeSync(fd, buffer, offset, length, position) {
      const n = nodeIo.writeSync(fd, buffer, offset, length, position);
      work.written += n;
      return n;
    },
    readdirSync(dir) {
      const names = nodeIo.readdirSync(dir);
      work.listed += names.length;
      return names;
    },
  };
  return { io, work, reads };
}

const since = (now: Work, then: Work): Work => ({
  written: now.written - then.written,
  created: now.created - then.created,
  opened: now.opened - then.opened,
  read: now.read - then.read,
  listed: now.listed - then.listed,
});

/** The files of `reads` opened to be read more than once. */
const readTwice = (reads: readonly string[]) =>
  reads.filter((file, i) => reads.indexOf(file) !== i);

/** Names of one length, so that every queue's records weigh the same. */
const queueName = (i: number) => `q-${String(i).padStart(5, '0')}`;

async function declare(broker: Broker, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const queue = await broker.queue(queueName(i), { durable: true });
    await queue.publish('x'.repeat(100), { deliveryMode: 2 });
  }
}

// A cache of few descriptors: every queue's files go through evictions, as with many queues.
const storageOf = (dir: string, io: FsIo) =>
  fsStorage({ dir, io, fsync: 'never', maxOpenFiles: 8 });

describe('many durable queues on fs storage', () => {
  test('declaring a durable queue writes as much with 300 queues declared as with 10, and reads each file once', async () => {
    const { io, work, reads } = countingIo();
    const broker = await Broker.open({ storage: storageOf(path.join(root, 'declare'), io) });
    try {
      await declare(broker, 0, 10);
      let before = { ...work };
      await declare(broker, 10, 20);
      const early = since(work, before);
      await declare(broker, 20, 300);
      before = { ...work };
      const readBefore = reads.length;
      await declare(broker, 300, 310);
      const late = since(work, before);
      // Nothing rewritten whole (the broker's records, a list of queues) nor scanned per declare.
      expect(late).toEqual(early);
      expect(early.written).toBeLessThan(10 * 2000);
      // Each file a declare looks for is looked up once: the queue's ~logs, ~meta and
      // ~meta.prev, and its log's ~options, ~segments and ~deleted (none there yet).
      expect(readTwice(reads.slice(readBefore))).toEqual([]);
      expect(early.read).toBe(10 * 6);
    } finally {
      await broker.close();
    }
  });

  test('reopening a broker costs the same per queue with 40 queues as with 10', async () => {
    const reopening = async (queues: number): Promise<Work> => {
      const dir = path.join(root, `reopen-${queues}`);
      const writing = countingIo();
      const first = await Broker.open({ storage: storageOf(dir, writing.io) });
      await declare(first, 0, queues);
      await first.close();
      const { io, work, reads } = countingIo();
      const broker = await Broker.open({ storage: storageOf(dir, io) });
      const held = (await broker.queues()).reduce((sum, queue) => sum + queue.messages, 0);
      await broker.close();
      expect(held).toBe(queues);
      // The broker's metadata too, compacted as it opens: from what was read, not read again.
      expect(readTwice(reads)).toEqual([]);
      return { ...work };
    };
    const [ten, twenty, forty] = [await reopening(10), await reopening(20), await reopening(40)];
    // Linear: twenty more queues cost twice what ten more do, file for file.
    for (const key of ['created', 'opened', 'listed'] as const) {
      expect(forty[key] - twenty[key], key).toBe(2 * (twenty[key] - ten[key]));
    }
    // Bytes too, but for the rewrite of the broker's records, whose size is linear itself.
    expect(forty.written - twenty.written).toBeLessThanOrEqual(
      2 * (twenty.written - ten.written) + 40 * 200,
    );
  });
});
