import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import type { Message } from '../../../src/message/message.js';
import { QuorumQueue } from '../../../src/queues/quorum/quorum-queue.js';
import { fsStorage } from '../../../src/storage/fs/index.js';

async function drain(queue: QuorumQueue): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString() ?? '');
  return out;
}

async function publish(queue: QuorumQueue, bodies: [string, number?][]): Promise<void> {
  for (const [body, priority] of bodies) {
    await queue.publish(body, priority === undefined ? {} : { priority });
  }
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the delivery order of a quorum queue', () => {
  it('delivers returned messages first, in the order they came back', async () => {
    await using q = await QuorumQueue.open({ name: 'q' });
    await publish(q, [['a'], ['b'], ['c'], ['d']]);
    const a = (await q.get({ noAck: false })) as Message;
    const b = (await q.get({ noAck: false })) as Message;
    await b.nack(true);
    await a.nack(true);
    expect(q.messageCount).toBe(4);
    expect(q.stats().messagesUnacknowledged).toBe(0);
    expect(await drain(q)).toEqual(['b', 'a', 'c', 'd']);
  });

  it('serves high priorities (above 4) and normal ones 2:1, FIFO within each', async () => {
    await using q = await QuorumQueue.open({ name: 'q' });
    await publish(q, [['n1'], ['n2', 4], ['n3'], ['h1', 5], ['h2', 9], ['h3', 200], ['h4', 6]]);
    // The first two turns go to high; the third to the older of the two heads (n1).
    expect(await drain(q)).toEqual(['h1', 'h2', 'n1', 'h3', 'h4', 'n2', 'n3']);
  });

  it("delivers a high message published before a normal one first, even on normal's turn", async () => {
    await using q = await QuorumQueue.open({ name: 'q' });
    await publish(q, [['h1', 9], ['h2', 9], ['h3', 9], ['n1'], ['h4', 9]]);
    expect(await drain(q)).toEqual(['h1', 'h2', 'h3', 'h4', 'n1']);
  });

  it('purges returned and waiting messages alike, and counts them', async () => {
    await using q = await QuorumQueue.open({ name: 'q' });
    await publish(q, [['a'], ['b', 9]]);
    const first = (await q.get({ noAck: false })) as Message;
    expect(first.bodyString()).toBe('b');
    await first.nack(true);
    expect(await q.purge()).toBe(2);
    expect(q.stats()).toMatchObject({ messages: 0, messageBytes: 0 });
  });

  it('keeps high and normal messages across a restart on fs, high first again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-quorum-order-'));
    dirs.push(dir);
    const open = (broker: Broker) => broker.queue('q', { arguments: { 'x-queue-type': 'quorum' } });
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      await publish(await open(broker), [['n1'], ['h1', 7]]);
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    expect(await drain(await open(broker))).toEqual(['h1', 'n1']);
  });
});
