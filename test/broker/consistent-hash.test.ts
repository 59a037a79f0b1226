import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { PreconditionFailedError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';

const KEYS = Array.from({ length: 20 }, (_, i) => `order-${i}`);

/** Publishes one message per key (its body) and returns, per key, the queue it reached. */
async function assignment(broker: Broker, queues: string[], publish: (key: string) => unknown) {
  for (const key of KEYS) await publish(key);
  const out: Record<string, string> = {};
  for (const name of queues) {
    const q = await broker.queue(name);
    for (let m = await q.get(); m; m = await q.get()) out[m.bodyString()] = name;
  }
  return out;
}

describe('consistent-hash exchange on the broker', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mqlite-chx-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is declared with broker.exchange and routes each message to one bound queue', async () => {
    await using broker = await Broker.open();
    const ex = await broker.exchange('orders', 'x-consistent-hash');
    for (const [q, w] of [
      ['p0', '1'],
      ['p1', '1'],
      ['p2', '2'],
    ] as const) {
      await (await broker.queue(q)).bind('orders', w);
    }
    const seen = await assignment(broker, ['p0', 'p1', 'p2'], (key) =>
      ex.publish(key, { routingKey: key }),
    );
    expect(Object.keys(seen).sort()).toEqual([...KEYS].sort());
    expect(new Set(Object.values(seen)).size).toBeGreaterThan(1);
    expect(broker.exchanges().find((e) => e.name === 'orders')?.type).toBe('x-consistent-hash');
  });

  it('hashes the message_id property when hash-property names it', async () => {
    await using broker = await Broker.open();
    const ex = await broker.exchange('by-id', 'x-consistent-hash', {
      arguments: { 'hash-property': 'message_id' },
    });
    for (const q of ['a', 'b', 'c']) await (await broker.queue(q)).bind('by-id', '3');
    // One routing key for all: only the message ids spread them.
    const seen = await assignment(broker, ['a', 'b', 'c'], (key) =>
      ex.publish(key, { routingKey: 'same', messageId: key }),
    );
    expect(Object.keys(seen).sort()).toEqual([...KEYS].sort());
    expect(new Set(Object.values(seen)).size).toBeGreaterThan(1);
  });

  it('refuses a bad binding key with 406 and keeps the bindings it has', async () => {
    await using broker = await Broker.open();
    await broker.exchange('chx', 'x-consistent-hash');
    const q = await broker.queue('q');
    await q.bind('chx', '2');
    await expect(q.bind('chx', 'heavy')).rejects.toThrow(PreconditionFailedError);
    expect(broker.bindings('q').map((b) => b.routingKey)).toEqual(['2']);
  });

  it('keeps its arguments, bindings and queue assignment across a restart on fs', async () => {
    const queues = ['s0', 's1', 's2'];
    let before: Record<string, string>;
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      await broker.exchange('chx', 'x-consistent-hash', { arguments: { 'x-algorithm': 'jump' } });
      for (const q of queues) await (await broker.queue(q)).bind('chx', '4');
      before = await assignment(broker, queues, (key) =>
        broker.publish('chx', key, { routingKey: key }),
      );
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    expect(broker.exchanges().find((e) => e.name === 'chx')?.arguments).toEqual({
      'x-algorithm': 'jump',
    });
    const after = await assignment(broker, queues, (key) =>
      broker.publish('chx', key, { routingKey: key }),
    );
    expect(after).toEqual(before);
  });

  it('goes through a definitions export and import unchanged', async () => {
    await using broker = await Broker.open();
    await broker.exchange('chx', 'x-consistent-hash', { arguments: { 'x-hash-on': 'user' } });
    await (await broker.queue('q')).bind('chx', '7');
    const defs = broker.exportDefinitions();
    expect(defs.exchanges).toContainEqual(
      expect.objectContaining({ name: 'chx', type: 'x-consistent-hash' }),
    );
    await using again = await Broker.open({ definitions: defs });
    expect(again.bindings('q').map((b) => b.routingKey)).toEqual(['7']);
    await again.publish('chx', 'm', { headers: { user: 'u1' } });
    expect((await (await again.queue('q')).get())?.bodyString()).toBe('m');
  });

  it('dead-letters through it by header, dropping a dead letter whose x-hash-on header is no string', async () => {
    await using broker = await Broker.open();
    await broker.exchange('dlx', 'x-consistent-hash', { arguments: { 'x-hash-on': 'user' } });
    const dead = await broker.queue('dead');
    await dead.bind('dlx', '1');
    const work = await broker.queue('work', { arguments: { 'x-dead-letter-exchange': 'dlx' } });
    await work.publish('fine', { headers: { user: 'u1' } });
    await work.publish('refused', { headers: { user: 5 } });
    for (let m = await work.get({ noAck: false }); m; m = await work.get({ noAck: false })) {
      await m.reject(false);
    }
    const bodies: string[] = [];
    for (let m = await dead.get(); m; m = await dead.get()) bodies.push(m.bodyString());
    expect(bodies).toEqual(['fine']);
    expect(work.messageCount).toBe(0);
  });
});
