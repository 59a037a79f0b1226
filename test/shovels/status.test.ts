/**
 * What `broker.shovels()` tells of a running shovel beyond its state, as RabbitMQ 4.x reports it:
 * whether the destination takes messages (`blockedStatus`), what it published, what it holds
 * while the destination is blocked, and what is left before `src-delete-after`.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { ShovelDefinition } from '../../src/broker/shovel-definition.js';
import type { ShovelStatus } from '../../src/broker/shovel-host.js';
import { type StartedBroker, startBroker } from '../../src/testing/server/index.js';
import { poll } from './poll.js';

const started: StartedBroker[] = [];
afterEach(async () => {
  for (const broker of started.splice(0)) await broker.stop();
});

/** A destination broker served over AMQP, and an edge broker whose queue `in` it shovels into. */
async function edgeAndCentral(definition: Partial<ShovelDefinition> = {}) {
  const central = await startBroker();
  const edge = await startBroker();
  started.push(central, edge);
  const input = await edge.broker.queue('in');
  const out = await central.broker.queue('central', { durable: true });
  await edge.broker.setShovel('up', {
    'src-uri': 'amqp://',
    'src-queue': 'in',
    'dest-uri': central.url,
    'dest-queue': 'central',
    ...definition,
  });
  const status = (done: (s: ShovelStatus) => boolean, what: string) =>
    poll(
      async () => (await edge.broker.shovels())[0]!,
      (s) => s !== undefined && done(s),
      what,
    );
  await status((s) => s.state === 'running', 'the shovel running');
  return { central, input, out, status };
}

describe('a running shovel', () => {
  test('is running with nothing held, and counts what it publishes', async () => {
    const { input, out, status } = await edgeAndCentral();
    expect(await status(() => true, 'its status')).toMatchObject({
      state: 'running',
      blockedStatus: 'running',
      published: 0,
      held: 0,
      remaining: 'unlimited',
      remainingUnacked: 'unlimited',
    });
    for (const body of ['a', 'b']) await input.publish(body);
    await poll(
      () => out.messageCount,
      (n) => n === 2,
      'both messages at the destination',
    );
    expect(await status((s) => s.forwarded === 2, 'both confirmed and acknowledged')).toMatchObject(
      { published: 2, held: 0, blockedStatus: 'running' },
    );
  });

  test('whose destination blocks its connection is blocked and holds what it takes, then runs again and publishes it all', async () => {
    const { central, input, out, status } = await edgeAndCentral();
    await input.publish('before');
    await status((s) => s.forwarded === 1, 'the first message forwarded');
    central.faults.block();
    // The broker blocks the connection at its next publish, which it then does not read.
    await input.publish('a');
    await status((s) => s.blockedStatus === 'blocked', 'the shovel blocked');
    for (const body of ['b', 'c']) await input.publish(body);
    const blocked = await status((s) => s.held === 2, 'the next two held');
    expect(blocked).toMatchObject({ state: 'running', blockedStatus: 'blocked', published: 2 });
    expect(out.messageCount).toBe(1);
    central.faults.unblock();
    const unblocked = await status(
      (s) => s.forwarded === 4 && s.inFlight === 0,
      'all four forwarded',
    );
    expect(unblocked).toMatchObject({ blockedStatus: 'running', published: 4, held: 0 });
    expect(out.messageCount).toBe(4);
  });

  test('with src-delete-after counts down what it still has to move, and what the destination has not confirmed still counts', async () => {
    const { central, input, status } = await edgeAndCentral({ 'src-delete-after': 10 });
    expect(await status(() => true, 'its status')).toMatchObject({
      remaining: 10,
      remainingUnacked: 10,
    });
    await input.publish('before');
    expect(await status((s) => s.forwarded === 1, 'one forwarded')).toMatchObject({
      remaining: 9,
      remainingUnacked: 9,
    });
    central.faults.block();
    for (const body of ['a', 'b', 'c']) await input.publish(body);
    const blocked = await status(
      (s) => s.blockedStatus === 'blocked' && s.published + s.held === 4,
      'the shovel blocked',
    );
    // Published and unconfirmed, or held: only the confirmed one left `remaining`.
    expect(blocked).toMatchObject({ remaining: 9, remainingUnacked: 10 - blocked.published });
    central.faults.unblock();
    expect(await status((s) => s.forwarded === 4, 'all four forwarded')).toMatchObject({
      remaining: 6,
      remainingUnacked: 6,
    });
  });

  test('whose destination stops reading shows flow while its socket does not drain', async () => {
    const { central, input, status } = await edgeAndCentral();
    central.faults.stall({ name: 'Shovel up' });
    // More than the socket buffers hold on both sides of the loopback.
    const body = new Uint8Array(1024 * 1024);
    for (let i = 0; i < 48; i++) await input.publish(body);
    const flow = await status((s) => s.blockedStatus === 'flow', 'the shovel in flow');
    expect(flow).toMatchObject({ state: 'running', held: 0 });
    // A stalled connection reads no close: cut it rather than wait for it.
    await central.faults.close({ name: 'Shovel up' }, { drop: true });
  });
});
