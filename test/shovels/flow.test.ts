/**
 * A destination that cannot take more: one that refuses a message (a `basic.nack`, a full queue
 * with `x-overflow: reject-publish`) and one that blocks its publishers (`connection.blocked`).
 * Either way the shovel keeps running, loses nothing and sends nothing twice.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { ShovelState } from '../../src/broker/shovel-host.js';
import type { DropEvent } from '../../src/diagnostics.js';
import { ServerFaults } from '../../src/server/faults.js';
import { listen } from '../../src/server/server.js';
import { poll } from './poll.js';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close().catch(() => {});
});
async function broker() {
  const b = await Broker.open();
  open.push(b);
  return b;
}

/** What `pick` takes from each event of a diagnostics channel (undefined: nothing), as they come. */
async function watch<T>(name: string, pick: (event: never) => T | undefined): Promise<T[]> {
  const { subscribe, unsubscribe } = await import('node:diagnostics_channel');
  const seen: T[] = [];
  const listener = (event: unknown) => {
    const picked = pick(event as never);
    if (picked !== undefined) seen.push(picked);
  };
  subscribe(name, listener);
  open.push({ close: async () => void unsubscribe(name, listener) });
  return seen;
}

/** Every state the shovel `name` goes through. */
const watchStates = (name: string) =>
  watch('mqlite:shovel', (e: { name: string; state: ShovelState }) =>
    e.name === name ? e.state : undefined,
  );

/** Each message a full queue of that name refused (`x-overflow: reject-publish`). */
const watchRefusals = (queue: string) =>
  watch('mqlite:drop', (e: DropEvent) =>
    e.queue === queue && e.reason === 'overflow' ? e.message : undefined,
  );

const full = { 'x-max-length': 1, 'x-overflow': 'reject-publish' };

/** Takes the messages of `queue` one at a time until `count` arrived, in arrival order. */
async function drain(
  queue: Awaited<ReturnType<Broker['queue']>>,
  count: number,
): Promise<string[]> {
  const bodies: string[] = [];
  await poll(
    async () => {
      const message = await queue.get({ noAck: true });
      if (message) bodies.push(message.bodyString());
      return bodies.length;
    },
    (n) => n === count,
    `${count} messages`,
  );
  return bodies;
}

describe('a destination that nacks', () => {
  test('a message the destination queue refuses goes back to the source and arrives once there is room', async () => {
    const states = await watchStates('nacked');
    const refused = await watchRefusals('out');
    const b = await broker();
    const input = await b.queue('in');
    const out = await b.queue('out', { durable: true, arguments: full });
    await out.publish('already there');
    for (const body of ['a', 'b', 'c']) await input.publish(body);
    await b.setShovel('nacked', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': 'amqp://',
      'dest-queue': 'out',
    });
    // Refused again and again while the queue is full: the shovel keeps running.
    await poll(
      () => refused.length,
      (n) => n >= 6,
      'refused messages coming round again',
    );
    expect(states).toEqual(['starting', 'running']);
    // Each once: a refused message may come round after one refused later was taken.
    expect((await drain(out, 4)).sort()).toEqual(['a', 'already there', 'b', 'c']);
    expect(states).toEqual(['starting', 'running']);
    await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 3 && s[0].inFlight === 0,
      'three forwarded',
    );
    expect(input.messageCount).toBe(0);
    expect(out.messageCount).toBe(0);
  });

  test('on-publish: a message the full destination drops is gone, as without confirms on RabbitMQ', async () => {
    const states = await watchStates('unconfirmed');
    const b = await broker();
    const input = await b.queue('in');
    const out = await b.queue('out', { durable: true, arguments: full });
    for (const body of ['a', 'b']) await input.publish(body);
    await b.setShovel('unconfirmed', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': 'amqp://',
      'dest-queue': 'out',
      'ack-mode': 'on-publish',
    });
    await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 2,
      'both acknowledged once published',
    );
    expect(input.messageCount).toBe(0);
    expect(await drain(out, 1)).toEqual(['a']);
    expect(states).toEqual(['starting', 'running']);
  });

  test('a remote destination nacks over AMQP: the shovel requeues instead of restarting', async () => {
    const states = await watchStates('up');
    const refused = await watchRefusals('central');
    const remote = await broker();
    const server = await listen(remote, { port: 0 });
    open.push(server);
    const central = await remote.queue('central', { durable: true, arguments: full });
    await central.publish('already there');
    const b = await broker();
    const input = await b.queue('in');
    for (const body of ['a', 'b']) await input.publish(body);
    await b.setShovel('up', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': server.url,
      'dest-queue': 'central',
    });
    await poll(
      () => refused.length,
      (n) => n >= 4,
      'nacked messages coming round again',
    );
    expect((await drain(central, 3)).sort()).toEqual(['a', 'already there', 'b']);
    expect(states).toEqual(['starting', 'running']);
  });
});

describe('a destination that blocks its publishers', () => {
  test('the shovel holds what it took while blocked, sends nothing, and forwards it all once unblocked', async () => {
    const states = await watchStates('up');
    const remote = await broker();
    const faults = new ServerFaults();
    const server = await listen(remote, { port: 0, faults });
    open.push(server);
    const central = await remote.queue('central', { durable: true });
    const b = await broker();
    const input = await b.queue('in');
    await b.setShovel('up', {
      'src-uri': 'amqp://',
      'src-queue': 'in',
      'dest-uri': server.url,
      'dest-queue': 'central',
    });
    await input.publish('before');
    await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 1,
      'the first message forwarded',
    );
    faults.block();
    for (const body of ['a', 'b', 'c']) await input.publish(body);
    await poll(
      () => b.shovels(),
      (s) => s[0]?.inFlight === 3,
      'the three messages taken and waiting',
    );
    expect(central.messageCount).toBe(1);
    expect(input.messageCount).toBe(0);
    faults.unblock();
    await poll(
      () => b.shovels(),
      (s) => s[0]?.forwarded === 4 && s[0].inFlight === 0,
      'all four forwarded',
    );
    expect(await drain(central, 4)).toEqual(['before', 'a', 'b', 'c']);
    expect(states).toEqual(['starting', 'running']);
  });
});
