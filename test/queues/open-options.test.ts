import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { LastValueQueue } from '../../src/queues/lvq/last-value-queue.js';
import { PriorityQueue, Queue } from '../../src/queues/priority-queue.js';
import { StreamQueue } from '../../src/queues/stream/stream-queue.js';

describe('open() options', () => {
  it('refuses an unknown option key of every queue kind with a TypeError', async () => {
    const open = {
      StreamQueue: (o: object) => StreamQueue.open({ name: 's', ...o }),
      LastValueQueue: (o: object) => LastValueQueue.open({ name: 'l', ...o }),
      PriorityQueue: (o: object) => PriorityQueue.open({ name: 'p', maxPriority: 3, ...o }),
      Queue: (o: object) => Queue.open({ name: 'q', ...o }),
    };
    for (const [kind, openKind] of Object.entries(open)) {
      await expect(openKind({ segmentByte: 1 })).rejects.toThrow(TypeError);
      await expect(openKind({ segmentByte: 1 })).rejects.toThrow(
        `unknown ${kind}.open() option 'segmentByte'`,
      );
      await expect(openKind(JSON.parse('{"__proto__": {}}'))).rejects.toThrow(
        `unknown ${kind}.open() option '__proto__'`,
      );
    }
  });

  it('takes every option a kind documents', async () => {
    const common = { namespace: 'ns', clock: systemClock, onDelete: () => {}, arguments: {} };
    const streams = await StreamQueue.open({
      name: 's',
      durable: true,
      exclusive: false,
      autoDelete: false,
      ...common,
    });
    const classic = { ...common, onError: () => {} };
    const lvq = await LastValueQueue.open({ name: 'l', key: 'k', ...classic });
    const priority = await PriorityQueue.open({ name: 'p', maxPriority: 3, ...classic });
    const queue = await Queue.open({ name: 'q', ...classic });
    for (const q of [streams, lvq, priority, queue]) await q.close();
  });
});
