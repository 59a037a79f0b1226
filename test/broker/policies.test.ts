import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { NotFoundError, PreconditionFailedError } from '../../src/errors.js';
import type { Queue } from '../../src/queues/priority-queue.js';
import type { StreamQueue } from '../../src/queues/stream/stream-queue.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

async function drain(queue: Pick<Queue, 'get'>): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString() ?? '');
  return out;
}

async function publishAll(queue: Queue, bodies: string[]): Promise<void> {
  for (const body of bodies) await queue.publish(body);
}

function info(broker: Broker, name: string) {
  return broker.queues().find((q) => q.name === name);
}

describe('setting a policy', () => {
  it('drops the head of an existing full queue at once, dead-lettering it', async () => {
    await using broker = await Broker.open();
    const dlq = (await broker.queue('dlq')) as Queue;
    const jobs = (await broker.queue('jobs', {
      deadLetterExchange: '',
      deadLetterRoutingKey: 'dlq',
    })) as Queue;
    await publishAll(jobs, ['1', '2', '3', '4']);
    await broker.setPolicy('limit', { pattern: '^jobs$', definition: { 'max-length': 2 } });
    expect(await drain(jobs)).toEqual(['3', '4']);
    const dead = await dlq.get();
    expect(dead?.bodyString()).toBe('1');
    expect(dead?.properties.headers?.['x-first-death-reason']).toBe('maxlen');
  });

  it('drops nothing from a queue that refuses publishes instead (x-overflow reject-publish)', async () => {
    await using broker = await Broker.open();
    const jobs = (await broker.queue('jobs', { overflow: 'reject-publish' })) as Queue;
    await publishAll(jobs, ['1', '2', '3']);
    await broker.setPolicy('limit', { pattern: '^jobs$', definition: { 'max-length': 1 } });
    await expect(jobs.publish('4')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect(await drain(jobs)).toEqual(['1', '2', '3']);
  });

  it('applies a new max-length before a new overflow mode, as RabbitMQ 3.10 does', async () => {
    await using broker = await Broker.open();
    const jobs = (await broker.queue('jobs')) as Queue;
    await publishAll(jobs, ['1', '2', '3']);
    await broker.setPolicy('limit', {
      pattern: '^jobs$',
      definition: { 'max-length': 2, overflow: 'reject-publish' },
    });
    await expect(jobs.publish('4')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    expect(await drain(jobs)).toEqual(['2', '3']);
  });

  it('lifts its limits when cleared, back to the declared arguments', async () => {
    await using broker = await Broker.open();
    const jobs = (await broker.queue('jobs', { maxLength: 3 })) as Queue;
    await broker.setPolicy('limit', { pattern: 'jobs', definition: { 'max-length': 1 } });
    await publishAll(jobs, ['1', '2']);
    expect(jobs.messageCount).toBe(1);
    await broker.clearPolicy('limit');
    await publishAll(jobs, ['3', '4', '5']);
    expect(await drain(jobs)).toEqual(['3', '4', '5']);
  });

  it('applies to queues declared later, and a new definition replaces the old one', async () => {
    await using broker = await Broker.open();
    await broker.setPolicy('limit', { pattern: '^logs\\.', definition: { 'max-length': 1 } });
    const logs = (await broker.queue('logs.app')) as Queue;
    const other = (await broker.queue('metrics')) as Queue;
    await publishAll(logs, ['a', 'b']);
    await publishAll(other, ['a', 'b']);
    expect([logs.messageCount, other.messageCount]).toEqual([1, 2]);
    await broker.setPolicy('limit', { pattern: '^logs\\.', definition: { 'message-ttl': 0 } });
    await publishAll(logs, ['c', 'd']);
    expect(await drain(logs)).toEqual(['b']);
  });

  it('gives message-ttl to messages published from then on, dead-letters them by policy', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const dlq = (await broker.queue('dlq')) as Queue;
    const jobs = (await broker.queue('jobs')) as Queue;
    await jobs.publish('before');
    await broker.setPolicy('ttl', {
      pattern: '^jobs$',
      definition: {
        'message-ttl': 1000,
        'dead-letter-exchange': '',
        'dead-letter-routing-key': 'dlq',
      },
    });
    await jobs.publish('after');
    clock.advance(1001);
    expect(await drain(jobs)).toEqual(['before']);
    const dead = await dlq.get();
    expect(dead?.bodyString()).toBe('after');
    expect(dead?.properties.headers?.['x-first-death-reason']).toBe('expired');
  });

  it('deletes an unused queue after its expires, on the clock', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    await broker.queue('idle');
    await broker.setPolicy('expiry', { pattern: '^idle$', definition: { expires: 5000 } });
    clock.advance(4999);
    expect(info(broker, 'idle')).toBeDefined();
    clock.advance(1);
    await vi.waitFor(() => expect(info(broker, 'idle')).toBeUndefined(), { timeout: 15_000 });
  });

  it('limits a last-value queue and a priority queue alike', async () => {
    await using broker = await Broker.open();
    const prices = (await broker.queue('prices', { lvqKey: 'isin' })) as Queue;
    const tasks = (await broker.queue('tasks', { maxPriority: 5 })) as Queue;
    for (const isin of ['A', 'B', 'C']) await prices.publish(isin, { headers: { isin } });
    await tasks.publish('low', { priority: 1 });
    await tasks.publish('high', { priority: 5 });
    await broker.setPolicy('one', { pattern: '^(prices|tasks)$', definition: { 'max-length': 1 } });
    expect(await drain(prices)).toEqual(['C']);
    expect(await drain(tasks)).toEqual(['low']);
  });

  it('runs retention on a stream with max-age', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const events = (await broker.queue('events', {
      type: 'stream',
      segmentBytes: 200,
    })) as StreamQueue;
    for (let i = 0; i < 20; i++) await events.publish(`event ${i}`);
    const before = events.messageCount;
    clock.advance(2 * 3_600_000);
    await broker.setPolicy('retention', { pattern: '^events$', definition: { 'max-age': '1h' } });
    expect(events.messageCount).toBeLessThan(before);
    expect(info(broker, 'events')?.effectiveArguments['x-max-age']).toBe('1h');
  });
});

describe('policy and arguments together', () => {
  it('the lower limit wins for max-length, message-ttl, expires, max-length-bytes, delivery-limit', async () => {
    await using broker = await Broker.open();
    await broker.queue('low', {
      arguments: {
        'x-max-length': 1,
        'x-message-ttl': 10,
        'x-expires': 100,
        'x-max-length-bytes': 5,
        'x-delivery-limit': 1,
      },
    });
    await broker.queue('high', {
      arguments: {
        'x-max-length': 9,
        'x-message-ttl': 90,
        'x-expires': 900,
        'x-max-length-bytes': 50,
        'x-delivery-limit': 9,
      },
    });
    await broker.setPolicy('limits', {
      pattern: '.*',
      definition: {
        'max-length': 5,
        'message-ttl': 50,
        expires: 500,
        'max-length-bytes': 20,
        'delivery-limit': 3,
      },
    });
    expect(info(broker, 'low')?.effectiveArguments).toEqual({
      'x-max-length': 1,
      'x-message-ttl': 10,
      'x-expires': 100,
      'x-max-length-bytes': 5,
      'x-delivery-limit': 1,
    });
    expect(info(broker, 'high')?.effectiveArguments).toEqual({
      'x-max-length': 5,
      'x-message-ttl': 50,
      'x-expires': 500,
      'x-max-length-bytes': 20,
      'x-delivery-limit': 3,
    });
  });

  it('delivery-limit -1 lifts the default limit of a quorum queue; any limit wins over -1 (RabbitMQ 4)', async () => {
    await using broker = await Broker.open();
    const QUORUM = { 'x-queue-type': 'quorum' };
    const unlimited = await broker.queue('unlimited', { arguments: QUORUM });
    const declared = await broker.queue('declared', {
      arguments: { ...QUORUM, 'x-delivery-limit': 2 },
    });
    const lifted = await broker.queue('lifted', {
      arguments: { ...QUORUM, 'x-delivery-limit': -1 },
    });
    const classic = await broker.queue('classic');
    await broker.setPolicy('none', { pattern: '.*', definition: { 'delivery-limit': -1 } });
    expect(unlimited.limits.deliveryLimit).toBeUndefined();
    expect(unlimited.limits.requeueToBack).toBe(true);
    expect(declared.limits.deliveryLimit).toBe(2);
    expect(classic.limits.deliveryLimit).toBeUndefined();
    await broker.setPolicy('none', { pattern: '.*', definition: { 'delivery-limit': 4 } });
    expect(lifted.limits.deliveryLimit).toBe(4);
    expect(unlimited.limits.deliveryLimit).toBe(4);
  });

  it('the argument wins for dead-letter-exchange and overflow', async () => {
    await using broker = await Broker.open();
    await broker.queue('declared', {
      deadLetterExchange: 'mine',
      overflow: 'reject-publish',
    });
    await broker.queue('bare');
    await broker.setPolicy('dlx', {
      pattern: '.*',
      definition: { 'dead-letter-exchange': 'theirs', overflow: 'reject-publish-dlx' },
    });
    expect(info(broker, 'declared')).toMatchObject({
      policy: 'dlx',
      arguments: { 'x-dead-letter-exchange': 'mine', 'x-overflow': 'reject-publish' },
      effectiveArguments: { 'x-dead-letter-exchange': 'mine', 'x-overflow': 'reject-publish' },
    });
    expect(info(broker, 'bare')).toMatchObject({
      arguments: {},
      effectiveArguments: {
        'x-dead-letter-exchange': 'theirs',
        'x-overflow': 'reject-publish-dlx',
      },
    });
  });

  it('the highest priority matching policy applies, one per queue', async () => {
    await using broker = await Broker.open();
    const jobs = (await broker.queue('jobs')) as Queue;
    await broker.setPolicy('low', {
      pattern: 'jobs',
      priority: 1,
      definition: { 'max-length': 1 },
    });
    await broker.setPolicy('high', {
      pattern: 'jobs',
      priority: 2,
      definition: { 'message-ttl': 60_000 },
    });
    await broker.setPolicy('exchanges-only', {
      pattern: 'jobs',
      applyTo: 'exchanges',
      priority: 9,
      definition: { 'max-length': 0 },
    });
    await publishAll(jobs, ['1', '2', '3']);
    expect(info(broker, 'jobs')).toMatchObject({
      policy: 'high',
      effectiveArguments: { 'x-message-ttl': 60_000 },
    });
    expect(jobs.messageCount).toBe(3);
  });

  it('a policy with a key the queue kind does not act on skips it (max-age on a classic queue)', async () => {
    await using broker = await Broker.open();
    await broker.queue('jobs');
    await broker.queue('events', { type: 'stream' });
    await broker.setPolicy('mixed', {
      pattern: '.*',
      definition: { 'max-age': '1D', 'message-ttl': 1000 },
    });
    await broker.setPolicy('age', { pattern: '^events$', definition: { 'max-age': '1D' } });
    expect(info(broker, 'jobs')?.policy).toBeUndefined();
    expect(info(broker, 'events')?.policy).toBe('age');
  });

  it('queue-mode is accepted and changes nothing', async () => {
    await using broker = await Broker.open();
    await broker.queue('jobs');
    await broker.setPolicy('lazy', { pattern: '.*', definition: { 'queue-mode': 'lazy' } });
    expect(info(broker, 'jobs')).toMatchObject({ policy: 'lazy', effectiveArguments: {} });
  });
});

describe('an alternate-exchange policy', () => {
  it('routes what an exchange (amq.* too) cannot route; its own argument wins', async () => {
    await using broker = await Broker.open();
    const unrouted = await broker.queue('unrouted');
    const own = await broker.queue('own');
    await broker.exchange('ae', 'fanout');
    await broker.exchange('own-ae', 'fanout');
    await unrouted.bind('ae');
    await own.bind('own-ae');
    await broker.exchange('orders', 'direct');
    await broker.exchange('invoices', 'direct', { arguments: { 'alternate-exchange': 'own-ae' } });
    await broker.setPolicy('ae', {
      pattern: '^(orders|invoices|amq\\.direct|)$',
      applyTo: 'exchanges',
      definition: { 'alternate-exchange': 'ae' },
    });
    await broker.publish('orders', 'lost order', { routingKey: 'nowhere' });
    await broker.publish('amq.direct', 'lost direct', { routingKey: 'nowhere' });
    await broker.publish('', 'to no queue', { routingKey: 'nowhere' });
    await broker.publish('invoices', 'lost invoice', { routingKey: 'nowhere' });
    // The default exchange follows no alternate exchange, as on RabbitMQ.
    expect(await drain(unrouted)).toEqual(['lost order', 'lost direct']);
    expect(await drain(own)).toEqual(['lost invoice']);
    await broker.clearPolicy('ae');
    await broker.publish('orders', 'dropped', { routingKey: 'nowhere' });
    expect(unrouted.messageCount).toBe(0);
  });
});

describe('listing policies', () => {
  it('lists them in the shape of a RabbitMQ definitions file', async () => {
    await using broker = await Broker.open();
    await broker.setPolicy('b', { pattern: '^b', definition: { 'max-length': 1 } });
    await broker.setPolicy('a', {
      pattern: '^a',
      applyTo: 'queues',
      priority: 3,
      definition: { 'message-ttl': 10 },
    });
    expect(broker.policies()).toEqual([
      {
        name: 'a',
        vhost: '/',
        pattern: '^a',
        'apply-to': 'queues',
        priority: 3,
        definition: { 'message-ttl': 10 },
      },
      {
        name: 'b',
        vhost: '/',
        pattern: '^b',
        'apply-to': 'all',
        priority: 0,
        definition: { 'max-length': 1 },
      },
    ]);
  });
});

describe('invalid policies', () => {
  const refused: [string, Parameters<Broker['setPolicy']>[1], string][] = [
    [
      'an unknown key',
      { pattern: '.*', definition: { foo: 1 } as never },
      '{"foo": 1} are not recognised policy settings',
    ],
    [
      'a wrong type',
      { pattern: '.*', definition: { 'max-length': 'x' as never } },
      '"x" is not a valid maximum length',
    ],
    [
      'a negative TTL',
      { pattern: '.*', definition: { 'message-ttl': -1 } },
      '-1 is not a valid message TTL',
    ],
    ['expires 0', { pattern: '.*', definition: { expires: 0 } }, '0 is not a valid queue expiry'],
    [
      'an overflow mode',
      { pattern: '.*', definition: { overflow: 'bla' } },
      '"bla" is not a valid overflow value',
    ],
    [
      'a max-age',
      { pattern: '.*', definition: { 'max-age': '1Q' } },
      '"1Q" is not a valid max age',
    ],
    [
      'a queue-mode',
      { pattern: '.*', definition: { 'queue-mode': 'x' } },
      '"x" is not a valid queue-mode value',
    ],
    [
      'a dead-letter exchange',
      { pattern: '.*', definition: { 'dead-letter-exchange': 1 } },
      '1 is not a valid dead letter exchange name',
    ],
    [
      'an invalid regex',
      { pattern: '(', definition: { 'max-length': 1 } },
      'pattern should be regular expression but is invalid',
    ],
    ['an empty definition', { pattern: '.*', definition: {} }, 'no policy provided'],
    [
      'apply-to',
      { pattern: '.*', applyTo: 'foo' as never, definition: { 'max-length': 1 } },
      "apply-to 'foo' unrecognised; should be 'queues', 'exchanges' or 'all'",
    ],
    [
      'a priority',
      { pattern: '.*', priority: 1.5, definition: { 'max-length': 1 } },
      '1.5 is not a valid priority',
    ],
  ];
  for (const [what, options, message] of refused) {
    it(`refuses ${what} with 406, as RabbitMQ words it`, async () => {
      await using broker = await Broker.open();
      const error = await broker.setPolicy('p', options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PreconditionFailedError);
      expect((error as Error).message).toContain(`Validation failed: ${message}`);
      expect(broker.policies()).toEqual([]);
    });
  }

  it('refuses a malformed call with a TypeError and an unknown name on clear with 404', async () => {
    await using broker = await Broker.open();
    await expect(
      broker.setPolicy('', { pattern: '.*', definition: { expires: 1 } }),
    ).rejects.toThrow(TypeError);
    await expect(
      broker.setPolicy('p', { pattern: 1 as never, definition: { expires: 1 } }),
    ).rejects.toThrow(TypeError);
    await expect(
      broker.setPolicy('p', { pattern: '.*', definition: { expires: 1 }, apply: 'all' } as never),
    ).rejects.toThrow("unknown policy option 'apply'");
    await expect(broker.clearPolicy('none')).rejects.toThrow(NotFoundError);
    await expect(broker.clearPolicy('none')).rejects.toThrow("no policy 'none' in vhost '/'");
  });

  it('keeps a definition key named __proto__ off every prototype', async () => {
    await using broker = await Broker.open();
    const definition = JSON.parse('{"__proto__": {"max-length": 1}}');
    await expect(broker.setPolicy('p', { pattern: '.*', definition })).rejects.toThrow(
      'are not recognised policy settings',
    );
    expect(({} as Record<string, unknown>)['max-length']).toBeUndefined();
  });
});

describe('policies on disk', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('survive a reopen and apply to the queues that come back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-policies-'));
    dirs.push(dir);
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      await broker.queue('jobs');
      await broker.setPolicy('limit', { pattern: '^jobs$', definition: { 'max-length': 2 } });
      await broker.setPolicy('gone', { pattern: '^x$', definition: { 'max-length': 2 } });
      await broker.clearPolicy('gone');
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    expect(broker.policies().map((p) => p.name)).toEqual(['limit']);
    const jobs = (await broker.queue('jobs')) as Queue;
    await publishAll(jobs, ['1', '2', '3']);
    expect(await drain(jobs)).toEqual(['2', '3']);
    expect(info(broker, 'jobs')).toMatchObject({ policy: 'limit', arguments: {} });
  });

  it('a damaged policy record is reported and left out; the others apply', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-policies-'));
    dirs.push(dir);
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      await broker.setPolicy('good', { pattern: '^jobs$', definition: { 'max-length': 1 } });
    }
    const storage = fsStorage({ dir });
    const meta = (await storage.namespace('')).meta;
    meta.set('policy:bad', { pattern: '(', 'apply-to': 'all', priority: 0, definition: {} });
    await meta.sync();
    await storage.close();
    const errors: unknown[] = [];
    await using broker = await Broker.open({
      storage: fsStorage({ dir }),
      onError: (error) => errors.push(error),
    });
    expect(broker.policies().map((p) => p.name)).toEqual(['good']);
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'MQLITE_DATA_LOSS',
        message: expect.stringContaining("stored policy 'bad' is malformed"),
      }),
    ]);
  });
});
