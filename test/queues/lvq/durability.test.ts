import { describe, expect, test } from 'vitest';
import { PreconditionFailedError } from '../../../src/errors.js';
import { Queue } from '../../../src/queues/priority-queue.js';
import { drain, openLvq, publishQuotes, STORAGE_KINDS, settle, storagePerTest } from './support.js';

/** What an LVQ holds after `specs` were published: the last spec of each key, and keyless ones. */
function expectedLatest(specs: readonly string[]): string[] {
  const kept = new Map<string, number>();
  for (const [i, spec] of specs.entries()) {
    kept.set(spec.includes(':') ? spec.split(':')[0]! : `#${i}`, i);
  }
  return [...kept.values()].sort((a, b) => a - b).map((i) => specs[i]!);
}

describe.each(STORAGE_KINDS)('a last-value queue reopened on %s storage', (kind) => {
  const t = storagePerTest(kind);

  test('keeps exactly the latest value of each key and every keyless message', async () => {
    const queue = await openLvq(t.storage);
    const specs: string[] = [];
    for (let i = 0; i < 300; i++) specs.push(i % 50 === 0 ? `plain ${i}` : `K${i % 7}:${i}`);
    await publishQuotes(queue, ...specs);
    await queue.close();
    await t.storage.reopen();
    const reopened = await openLvq(t.storage);
    expect(reopened.messageCount).toBe(7 + 6);
    expect(reopened.keyCount).toBe(7);
    expect(await drain(reopened)).toEqual(expectedLatest(specs));
    // Replacing after a reopen still works: the key map was rebuilt.
    await publishQuotes(reopened, 'K0:300', 'K0:301');
    expect(await drain(reopened)).toEqual(['K0:301']);
    await reopened.close();
  });

  test('an unacked latest value comes back redelivered; a superseded one does not', async () => {
    const queue = await openLvq(t.storage);
    await publishQuotes(queue, 'A:1', 'B:1');
    const a = await queue.get({ noAck: false });
    const b = await queue.get({ noAck: false });
    expect([a?.bodyString(), b?.bodyString()]).toEqual(['A:1', 'B:1']);
    await publishQuotes(queue, 'A:2');
    await queue.close();
    await t.storage.reopen();
    const reopened = await openLvq(t.storage);
    const first = await reopened.get();
    expect(first?.bodyString()).toBe('B:1');
    expect(first?.redelivered).toBe(true);
    const second = await reopened.get();
    expect(second?.bodyString()).toBe('A:2');
    expect(second?.redelivered).toBe(false);
    expect(await reopened.get()).toBeNull();
    await reopened.close();
  });

  test('keeps its key header: reopening with another key fails with 406', async () => {
    const queue = await openLvq(t.storage);
    await publishQuotes(queue, 'A:1');
    await queue.close();
    await t.storage.reopen();
    const error = await openLvq(t.storage, { key: 'isin' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect((error as Error).message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'qpid.last_value_queue_key' for queue 'prices' in vhost '/'",
    );
    const again = await openLvq(t.storage);
    expect(await drain(again)).toEqual(['A:1']);
    await again.close();
  });

  test('a plain queue cannot be reopened as a last-value queue', async () => {
    const plain = await Queue.open({ name: 'prices', storage: t.storage.storage });
    await plain.publish('x');
    await plain.close();
    await t.storage.reopen();
    const error = await openLvq(t.storage).catch((e: unknown) => e);
    expect((error as Error).message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'qpid.last_value_queue' for queue 'prices' in vhost '/'",
    );
  });
});

describe('a last-value queue on fs storage', () => {
  const t = storagePerTest('fs');

  test('survives a crash with the latest value of each key', async () => {
    const queue = await openLvq(t.storage);
    const specs: string[] = [];
    for (let i = 0; i < 500; i++) specs.push(`K${i % 10}:${i}`);
    await publishQuotes(queue, ...specs, 'plain');
    // No close: the directory is reopened as a restarted process would.
    t.storage.crash();
    const reopened = await openLvq(t.storage);
    expect(await drain(reopened)).toEqual(expectedLatest([...specs, 'plain']));
    await reopened.close();
  });

  test('superseded values are compacted away: the directory stays small', async () => {
    const queue = await openLvq(t.storage);
    const bodies = Array.from({ length: 100 }, (_, i) => `${'x'.repeat(90)}${i}`);
    for (let round = 0; round < 6; round++) {
      const all: Promise<void>[] = [];
      for (let i = 0; i < 5000; i++) {
        all.push(queue.publish(bodies[i % 100]!, { headers: { symbol: `K${i % 100}` } }));
      }
      await Promise.all(all);
      await settle();
    }
    expect(queue.messageCount).toBe(100);
    // 30 000 messages of ~100 bytes (4 MB of records) were published; 100 are live.
    expect(t.storage.diskBytes()).toBeLessThan(400_000);
    await queue.close();
    await t.storage.reopen();
    const reopened = await openLvq(t.storage);
    expect(reopened.messageCount).toBe(100);
    await reopened.close();
  });
});
