/**
 * A durable delayed exchange on the fs adapter: a confirmed persistent delayed publish survives a
 * power cut and is routed when due, also when it fell due while the broker was down; transient
 * ones go at a restart; a routed message is not routed again, also after a process crash once
 * its queue stored it; a damaged log is confined to its exchange.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { simulateCrash } from '../../src/testing/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { tempDir as freshDir, removeDataDirs } from '../support/data-dirs.js';
import { holdFsyncs } from '../support/held-fsyncs.js';
import { PowerLossDisk } from '../support/power-loss-disk.js';

const HOUR = 3_600_000;
const START = Date.UTC(2024, 0, 1);

afterAll(removeDataDirs);

const settle = () => new Promise((resolve) => setImmediate(resolve));

async function open(disk: PowerLossDisk, clock: ManualClock, errors: unknown[] = []) {
  const storage = fsStorage({ dir: disk.root, io: disk.io, fsync: 'always' });
  return Broker.open({ storage, clock, onError: (error) => errors.push(error) });
}

async function declare(broker: Broker) {
  const exchange = await broker.exchange('later', 'x-delayed-message', {
    arguments: { 'x-delayed-type': 'direct' },
  });
  const queue = await broker.queue('jobs', { durable: true });
  await queue.bind('later', 'k');
  return { exchange, queue };
}

async function take(broker: Broker): Promise<string[]> {
  const queue = await broker.queue('jobs', { durable: true });
  const out: string[] = [];
  for (let m = await queue.get({ noAck: true }); m; m = await queue.get({ noAck: true })) {
    out.push(m.bodyString() ?? '');
  }
  return out;
}

const pending = (broker: Broker) => broker.exchanges().find((e) => e.name === 'later')?.delayed;

describe('a durable delayed exchange on fs', () => {
  it('keeps every confirmed persistent delayed publish across a power cut, routed when due', async () => {
    const dir = freshDir();
    const disk = new PowerLossDisk(dir);
    const broker = await open(disk, new ManualClock(START));
    const { exchange } = await declare(broker);
    disk.record();
    const persistent = { routingKey: 'k', deliveryMode: 2 } as const;
    await exchange.publish('in 2h', { ...persistent, headers: { 'x-delay': 2 * HOUR } });
    await exchange.publish('in 1h', { ...persistent, headers: { 'x-delay': HOUR } });
    await exchange.publish('transient', { routingKey: 'k', headers: { 'x-delay': HOUR } });
    const states = disk.crashStates();
    await broker.close();
    const confirmed = states.filter((s) => s.label.includes('nothing unsynced kept')).at(-1)!;

    // Every state a crash may leave opens clean, routes nothing early and nothing unknown.
    for (const state of states) {
      const errors: unknown[] = [];
      const clock = new ManualClock(START + HOUR - 1);
      const again = await open(new PowerLossDisk(dir, state.inodes), clock, errors);
      clock.advance(0);
      await settle();
      expect(await take(again), state.label).toEqual([]);
      clock.advance(2 * HOUR);
      await settle();
      const routed = await take(again);
      expect(['in 1h', 'in 2h'], state.label).toEqual(expect.arrayContaining(routed));
      expect(errors, state.label).toEqual([]);
      await again.close();
    }

    // What was confirmed: both persistent ones, routed in due order once due, the transient gone.
    const clock = new ManualClock(START + 30 * 60_000);
    const again = await open(new PowerLossDisk(dir, confirmed.inodes), clock);
    expect(pending(again)).toEqual({ messages: 2, nextDue: START + HOUR });
    clock.advance(30 * 60_000);
    await settle();
    expect(await take(again)).toEqual(['in 1h']);
    await again.close();
  });

  it('routes at once on open what fell due while the broker was down, and only once', async () => {
    const dir = freshDir();
    const disk = new PowerLossDisk(dir);
    const broker = await open(disk, new ManualClock(START));
    const { exchange } = await declare(broker);
    for (const [body, delay] of [
      ['b', 2 * HOUR],
      ['a', HOUR],
    ] as const) {
      await exchange.publish(body, {
        routingKey: 'k',
        deliveryMode: 2,
        headers: { 'x-delay': delay },
      });
    }
    await broker.close();

    const clock = new ManualClock(START + 5 * HOUR);
    const again = await open(disk, clock);
    clock.advance(0);
    // Held until the queue stored them: a few turns after they are routed on fs.
    for (const end = Date.now() + 10_000; pending(again)?.messages !== 0 && Date.now() < end; ) {
      await settle();
    }
    expect(pending(again)?.messages).toBe(0);
    await again.close();

    const third = await open(disk, new ManualClock(START + 6 * HOUR));
    expect(pending(third)?.messages).toBe(0);
    expect(await take(third)).toEqual(['a', 'b']);
    await third.close();
  });

  it('routes a message once across a crash after its queue stored it, while its own fsync runs', async () => {
    const dir = freshDir();
    const clock = new ManualClock(START);
    const fsyncs = holdFsyncs(/delayed/);
    const storage = fsStorage({ dir, fsync: 'always', io: fsyncs.io });
    const broker = await Broker.open({ storage, clock });
    const { exchange } = await declare(broker);
    await exchange.publish('due', {
      routingKey: 'k',
      deliveryMode: 2,
      headers: { 'x-delay': HOUR },
    });
    // The exchange's log is slow to reach the disk, and holds a message published since.
    fsyncs.hold();
    void exchange.publish('later', { routingKey: 'k', headers: { 'x-delay': 2 * HOUR } });
    clock.advance(HOUR);
    // Settling starts once the queue holds the message durably: the exchange's fsync is held.
    for (const end = Date.now() + 10_000; fsyncs.held === 0 && Date.now() < end; ) await settle();
    expect(fsyncs.held).toBeGreaterThan(0);
    for (let i = 0; i < 4; i++) await settle();
    // Still counted: its settling is not durable yet.
    expect(pending(broker)?.messages).toBe(2);
    // The process dies: what it handed to the OS stays, its fsyncs never ran.
    simulateCrash(storage);

    const later = new ManualClock(START + 3 * HOUR);
    const again = await Broker.open({ storage: fsStorage({ dir }), clock: later });
    later.advance(0);
    for (let i = 0; i < 20; i++) await settle();
    expect(await take(again)).toEqual(['due']);
    await again.close();
  });

  it('drops its stored messages when deleted: a later open holds none', async () => {
    const dir = freshDir();
    const disk = new PowerLossDisk(dir);
    const clock = new ManualClock(START);
    const broker = await open(disk, clock);
    const { exchange } = await declare(broker);
    await exchange.publish('x', { routingKey: 'k', deliveryMode: 2, headers: { 'x-delay': HOUR } });
    await broker.deleteExchange('later');
    await declare(broker);
    await broker.close();
    const again = await open(disk, clock);
    expect(pending(again)).toEqual({ messages: 0, nextDue: undefined });
    clock.advance(HOUR);
    await settle();
    expect(await take(again)).toEqual([]);
    await again.close();
  });

  it('keeps a transient delayed exchange in memory: gone at a restart, with its messages', async () => {
    const dir = freshDir();
    const disk = new PowerLossDisk(dir);
    const broker = await open(disk, new ManualClock(START));
    const exchange = await broker.exchange('brief', 'fanout', {
      durable: false,
      arguments: { 'x-delayed-exchange': true },
    });
    await exchange.publish('x', { deliveryMode: 2, headers: { 'x-delay': HOUR } });
    expect(broker.exchanges().find((e) => e.name === 'brief')?.delayed?.messages).toBe(1);
    await broker.close();
    const again = await open(disk, new ManualClock(START));
    expect(again.exchanges().some((e) => e.name === 'brief')).toBe(false);
    await again.close();
  });
});

describe('a damaged delayed exchange log', () => {
  it('is reported with its file and position, and confined to its exchange', async () => {
    const dir = freshDir();
    const clock = new ManualClock(START);
    const broker = await Broker.open({ storage: fsStorage({ dir }), clock });
    for (const name of ['a', 'b']) {
      const exchange = await broker.exchange(name, 'fanout', {
        arguments: { 'x-delayed-exchange': true },
      });
      await exchange.publish(`${name} message`, { deliveryMode: 2, headers: { 'x-delay': HOUR } });
    }
    await broker.close();
    const segment = path.join(dir, '_', 'delayed_3aa', '0000000001.seg');
    const bytes = fs.readFileSync(segment);
    bytes[bytes.length - 20] = (bytes[bytes.length - 20] ?? 0) ^ 0xff;
    fs.writeFileSync(segment, bytes);

    const errors: unknown[] = [];
    const again = await Broker.open({
      storage: fsStorage({ dir }),
      clock,
      onError: (error) => errors.push(error),
    });
    const queue = await again.queue('out');
    await queue.bind('b');
    expect(errors).toEqual([
      expect.objectContaining({ file: segment, position: expect.any(Number) }),
    ]);
    expect(again.exchanges().find((e) => e.name === 'a')?.delayed?.messages).toBe(0);
    expect(again.exchanges().find((e) => e.name === 'b')?.delayed?.messages).toBe(1);
    clock.advance(HOUR);
    await settle();
    expect(await queue.get({ noAck: true }).then((m) => m?.bodyString())).toBe('b message');
    await again.close();
  });
});
