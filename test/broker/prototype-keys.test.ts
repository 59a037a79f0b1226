import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Message } from '../../src/message/message.js';
import type { FieldValue } from '../../src/message/types.js';
import { fsStorage } from '../../src/storage/fs/index.js';

/** Tables as JSON.parse makes them: `__proto__` is an own key, not the prototype. */
const table = (json: string) => JSON.parse(json) as Record<string, never>;
const KEYS = ['__proto__', 'constructor', 'prototype'] as const;

describe('user tables with __proto__, constructor and prototype keys', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mqlite-proto-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const open = (config?: string) =>
    Broker.open({ storage: fsStorage({ dir }), ...(config !== undefined && { config }) });

  it('keeps queue arguments as keys, equal across a reopen, and declares by them alone', async () => {
    const args = table(
      '{"__proto__": {"x-max-priority": 5}, "constructor": {"a": 1}, "prototype": 2, "x-max-length": 3}',
    );
    {
      await using broker = await open();
      const q = await broker.queue('q', { arguments: args });
      // The inner x-max-priority is not an argument: the queue is a plain FIFO.
      expect(broker.queues()[0]?.kind).toBe('classic');
      await q.publish('m');
      expect(Object.keys(broker.queues()[0]?.arguments ?? {})).toEqual([...KEYS, 'x-max-length']);
    }
    await using broker = await open();
    const [info] = broker.queues();
    expect(info?.kind).toBe('classic');
    expect(Object.getPrototypeOf(info?.arguments)).not.toEqual({ 'x-max-priority': 5 });
    expect(Object.keys(info?.arguments ?? {})).toEqual([...KEYS, 'x-max-length']);
    // The same declaration is equivalent after the reopen; the hidden x-max-priority is not.
    const q = await broker.queue('q', { arguments: args });
    expect((await q.get())?.bodyString()).toBe('m');
    await expect(broker.queue('q', { maxPriority: 5, maxLength: 3 })).rejects.toThrow(
      /inequivalent arg 'x-max-priority' for queue 'q'/,
    );
  });

  it('keeps headers (nested tables too) as keys through store, reopen and delivery', async () => {
    const headers = table(
      '{"__proto__": {"evil": 1}, "constructor": "c", "prototype": {"__proto__": {"deep": 2}, "constructor": [1]}}',
    );
    {
      await using broker = await open();
      const q = await broker.queue('q');
      await q.publish('m', { headers });
      const live = await q.get({ noAck: false });
      checkHeaders(live);
      await live?.nack(true);
    }
    await using broker = await open();
    const q = await broker.queue('q');
    const message = await q.get();
    checkHeaders(message);
  });

  function checkHeaders(message: Message | null | undefined) {
    const h = message?.properties.headers ?? {};
    expect(Object.keys(h).filter((k) => k !== 'x-delivery-count')).toEqual([...KEYS]);
    expect('evil' in h).toBe(false);
    expect(Object.getOwnPropertyDescriptor(h, '__proto__')?.value).toEqual({ evil: 1 });
    expect(h.constructor).toBe('c');
    const nested = h.prototype as Record<string, unknown>;
    expect(Object.keys(nested)).toEqual(['__proto__', 'constructor']);
    expect('deep' in nested).toBe(false);
    expect(Object.getOwnPropertyDescriptor(nested, '__proto__')?.value).toEqual({ deep: 2 });
    expect(nested.constructor).toEqual([1]);
  }

  it('routes a last-value key named constructor by the header, not Object.prototype', async () => {
    {
      await using broker = await open();
      const q = await broker.queue('prices', { lvqKey: 'constructor' });
      await q.publish('no key');
      await q.publish('a1', { headers: { constructor: 'a' } });
      await q.publish('a2', { headers: { constructor: 'a' } });
    }
    await using broker = await open();
    const q = await broker.queue('prices', { lvqKey: 'constructor' });
    const bodies: string[] = [];
    for (let m = await q.get(); m; m = await q.get()) bodies.push(m.bodyString());
    expect(bodies).toEqual(['no key', 'a2']);
  });

  it('matches stream filters on such header names, and ignores consumer args hidden in __proto__', async () => {
    {
      await using broker = await open();
      const s = await broker.queue('s', { type: 'stream' });
      await s.publish('none');
      await s.publish('proto', { headers: table('{"__proto__": "v"}') });
      await s.publish('ctor', { headers: { constructor: 'w' } });
    }
    await using broker = await open();
    const s = await broker.queue('s', { type: 'stream' });
    const read = async (args: Record<string, FieldValue>) => {
      const got: string[] = [];
      const sub = await s.subscribe({ args }, (m) => {
        got.push(m.bodyString());
      });
      await s.publish('end', { headers: table('{"__proto__": "v", "constructor": "w"}') });
      while (!got.includes('end')) await new Promise((r) => setImmediate(r));
      await sub.cancel();
      return got;
    };
    expect(
      await read({ 'x-stream-offset': 'first', 'x-stream-filter': table('{"__proto__": "v"}') }),
    ).toEqual(['proto', 'end']);
    expect(
      await read({ 'x-stream-offset': 'first', 'x-stream-filter': { constructor: 'w' } }),
    ).toEqual(['ctor', 'end', 'end']);
    // Arguments inside a '__proto__' table are not arguments: the default start, no filter.
    const hidden = await read(
      table('{"__proto__": {"x-stream-offset": "last", "x-stream-filter": "x"}}'),
    );
    expect(hidden.slice(0, 3)).toEqual(['none', 'proto', 'ctor']);
  });

  it('declares config queues named and argued with such keys', async () => {
    const file = path.join(dir, 'config.json');
    await writeFile(
      file,
      '{"queues": {"__proto__": {"arguments": {"__proto__": {"x-max-priority": 5}}}, "constructor": {"maxPriority": 2}}}',
    );
    {
      await using broker = await open(file);
      expect(broker.queues().map((q) => [q.name, q.kind])).toEqual([
        ['__proto__', 'classic'],
        ['constructor', 'priority'],
      ]);
    }
    await using broker = await open(file);
    expect(broker.queues().map((q) => [q.name, q.kind])).toEqual([
      ['__proto__', 'classic'],
      ['constructor', 'priority'],
    ]);
  });

  it('refuses a queue option named __proto__ as any unknown option', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('q', table('{"__proto__": {"maxPriority": 5}}'))).rejects.toThrow(
      new TypeError("unknown queue option '__proto__'"),
    );
  });
});
