/**
 * A queue being deleted is already gone for every call that names it, as on RabbitMQ: nothing
 * sees it closed but still listed.
 */
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ClosedError, NoRouteError, NotFoundError } from '../../src/errors.js';
import { holdDeletes } from '../support/held-deletes.js';
import { STORAGE_KINDS, storagePerTest } from '../support/test-storage.js';

describe.each(STORAGE_KINDS)('a queue being deleted (%s)', (kind) => {
  const current = storagePerTest(kind);

  /** A broker with queue `q`, bound to `ex`, whose deletion is under way and held. */
  async function deleting(options: { autoDelete?: boolean } = {}) {
    const held = holdDeletes(current.storage.storage);
    const broker = await Broker.open({ storage: held.storage });
    const queue = await broker.queue('q', { durable: false, ...options });
    await broker.exchange('ex', 'fanout');
    await queue.bind('ex');
    return { broker, queue, held };
  }

  test('its auto-delete after the last cancel leaves publishes, deletes and redeclares working', async () => {
    const { broker, queue, held } = await deleting({ autoDelete: true });
    const consumer = await queue.subscribe({ manualAck: true }, () => {});
    await queue.publish('1');
    await consumer.cancel();
    await held.waiting();
    // Unroutable now, as the queue is gone: dropped, or refused when mandatory.
    await expect(broker.publish('', '2', { routingKey: 'q' })).resolves.toBeUndefined();
    await expect(broker.publish('ex', '3', { mandatory: true })).rejects.toThrow(NoRouteError);
    await expect(queue.publish('4')).resolves.toBeUndefined();
    const deleted = broker.deleteQueue('q');
    const redeclared = broker.queue('q', { durable: false });
    held.release();
    await expect(deleted).resolves.toBe(0);
    const fresh = await redeclared;
    expect(fresh).not.toBe(queue);
    expect(fresh.messageCount).toBe(0);
    await broker.close();
  });

  test('a handle or a lookup of it finds no queue (404), never a closed one', async () => {
    const { broker, queue, held } = await deleting();
    const deleted = broker.deleteQueue('q');
    await held.waiting();
    const calls = [
      () => queue.purge(),
      () => queue.get(),
      () => queue.subscribe(() => {}),
      () => queue.bind('ex'),
      () => broker.purge('q'),
      () => broker.queue('q', { passive: true }),
    ];
    const outcomes = calls.map((call) =>
      call().then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
    held.release();
    await deleted;
    for (const outcome of await Promise.all(outcomes)) {
      expect(outcome).toBeInstanceOf(NotFoundError);
      expect(outcome).not.toBeInstanceOf(ClosedError);
    }
    expect(broker.queues()).toEqual([]);
    await broker.close();
  });
});
