import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { InvalidConfigError } from '../../src/errors.js';

describe('the vhost a broker is', () => {
  it('is / by default, and its errors name it', async () => {
    await using broker = await Broker.open();
    expect(broker.vhost).toBe('/');
    await expect(broker.queue('q', { passive: true })).rejects.toThrow(
      "NOT_FOUND - no queue 'q' in vhost '/'",
    );
  });

  it("names the broker's vhost in every error that names one", async () => {
    await using broker = await Broker.open({ vhost: 'orders', strict: true });
    expect(broker.vhost).toBe('orders');
    await expect(broker.queue('q', { passive: true })).rejects.toThrow(
      "NOT_FOUND - no queue 'q' in vhost 'orders'",
    );
    await broker.queue('q', { arguments: { 'x-max-length': 1 } });
    await expect(broker.queue('q', { arguments: { 'x-max-length': 2 } })).rejects.toThrow(
      "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'q' in vhost 'orders'",
    );
    await expect(broker.queue('typo', { arguments: { 'x-max-lenght': 1 } })).rejects.toThrow(
      "unknown argument 'x-max-lenght' for queue 'typo' in vhost 'orders'",
    );
    await expect(
      broker.queue('log', { arguments: { 'x-queue-type': 'stream', 'x-nope': 1 } }),
    ).rejects.toThrow("unknown argument 'x-nope' for queue 'log' in vhost 'orders'");
    const session = broker.session();
    await session.queue('mine', { exclusive: true });
    await expect(broker.queue('mine', { passive: true })).rejects.toThrow(
      "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'mine' in vhost 'orders'",
    );
    await session.close();
    await expect(broker.exchange('x', 'direct', { passive: true })).rejects.toThrow(
      "NOT_FOUND - no exchange 'x' in vhost 'orders'",
    );
    await expect(broker.clearPolicy('p')).rejects.toThrow(
      "NOT_FOUND - no policy 'p' in vhost 'orders'",
    );
  });

  it('names it for queues in use and consumers in exclusive use', async () => {
    await using broker = await Broker.open({ vhost: 'orders' });
    const q = await broker.queue('q');
    await q.subscribe({ exclusive: true }, () => {});
    await expect(q.subscribe({}, () => {})).rejects.toThrow(
      "ACCESS_REFUSED - queue 'q' in vhost 'orders' in exclusive use",
    );
    await expect(broker.deleteQueue('q', { ifUnused: true })).rejects.toThrow(
      "PRECONDITION_FAILED - queue 'q' in vhost 'orders' in use",
    );
  });

  it('exports its definitions and policies in it, and loads only entries of it', async () => {
    await using broker = await Broker.open({ vhost: 'orders' });
    await broker.queue('q');
    await broker.setPolicy('cap', { pattern: '^q$', definition: { 'max-length': 5 } });
    expect(broker.policies().map((p) => p.vhost)).toEqual(['orders']);
    const definitions = broker.exportDefinitions();
    expect(definitions.vhosts).toEqual([{ name: 'orders' }]);
    expect(definitions.queues.map((q) => q.vhost)).toEqual(['orders']);
    await using again = await Broker.open({ vhost: 'orders', definitions });
    expect(again.queues().map((q) => q.name)).toEqual(['q']);
    await expect(Broker.open({ definitions })).rejects.toThrow(InvalidConfigError);
    await expect(Broker.open({ definitions })).rejects.toThrow(
      "is in vhost 'orders': a broker is the one vhost '/'",
    );
  });

  it('refuses a vhost option that is not a non-empty string', async () => {
    await expect(Broker.open({ vhost: '' })).rejects.toThrow(
      new TypeError('Broker option vhost must be a non-empty string'),
    );
    await expect(Broker.open({ vhost: 7 as unknown as string })).rejects.toThrow(TypeError);
  });
});
