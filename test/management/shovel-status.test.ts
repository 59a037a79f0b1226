/**
 * A running shovel's state over the management API as RabbitMQ 4.x's plugin writes it: its
 * counts (`forwarded`, `pending`, `remaining`, `remaining_unacked`) before `state`, `state` its
 * blocked status (`running`, `flow`, `blocked`), repeated last as `blocked_status`. 3.10 has none
 * of these; `shovels.test.ts` compares the rest with it.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { ShovelDefinition } from '../../src/broker/shovel-definition.js';
import { type StartedBroker, startBroker } from '../../src/testing/server/index.js';
import { poll } from '../shovels/poll.js';
import { type Answer, api } from './served.js';

const started: StartedBroker[] = [];
afterEach(async () => {
  for (const broker of started.splice(0)) await broker.stop();
});

/** An edge broker with its management API, a shovel `up` from its queue `in`, and its state. */
async function edgeShovel(definition: Omit<ShovelDefinition, 'src-uri' | 'src-queue'>) {
  const edge = await startBroker({ management: true });
  started.push(edge);
  const input = await edge.broker.queue('in');
  await edge.broker.setShovel('up', { 'src-uri': 'amqp://', 'src-queue': 'in', ...definition });
  // biome-ignore lint/suspicious/noExplicitAny: the JSON the API answers
  const state = async (done: (state: any) => boolean, what: string) =>
    (
      await poll(
        () => api(edge.getManagementUrl(), 'GET', '/api/shovels/vhost/%2F/up'),
        (answer: Answer) => answer.status === 200 && done(answer.json[0]),
        what,
      )
    ).json[0];
  return { edge, input, state };
}

describe('a running shovel over the management API', () => {
  test('shows its counts before state and its blocked status last; blocked while its destination is, with what it holds as pending', async () => {
    const central = await startBroker();
    started.unshift(central);
    const out = await central.broker.queue('central', { durable: true });
    const { input, state } = await edgeShovel({ 'dest-uri': central.url, 'dest-queue': 'central' });
    const running = await state((s) => s.state === 'running', 'the shovel running');
    expect(Object.keys(running)).toEqual([
      'node',
      'timestamp',
      'name',
      'vhost',
      'type',
      'forwarded',
      'pending',
      'remaining',
      'remaining_unacked',
      'state',
      'src_uri',
      'src_protocol',
      'dest_protocol',
      'dest_uri',
      'src_queue',
      'dest_queue',
      'blocked_status',
    ]);
    expect(running).toMatchObject({
      forwarded: 0,
      pending: 0,
      remaining: 'unlimited',
      remaining_unacked: 'unlimited',
      state: 'running',
      blocked_status: 'running',
    });

    await input.publish('before');
    await state((s) => s.forwarded === 1, 'the first message forwarded');
    central.faults.block();
    // The broker blocks the connection at its next publish, which it then does not read.
    await input.publish('a');
    await state((s) => s.state === 'blocked', 'the shovel blocked');
    for (const body of ['b', 'c']) await input.publish(body);
    const blocked = await state((s) => s.pending === 2, 'the next two held');
    expect(blocked).toMatchObject({ forwarded: 2, state: 'blocked', blocked_status: 'blocked' });
    expect(Object.keys(blocked)).toEqual(Object.keys(running));

    central.faults.unblock();
    await poll(
      () => out.messageCount,
      (n) => n === 4,
      'all four at the destination',
    );
    expect(await state((s) => s.forwarded === 4, 'all four forwarded')).toMatchObject({
      pending: 0,
      state: 'running',
      blocked_status: 'running',
    });
  });

  test('with src-delete-after, remaining counts down to the shovel deleting itself', async () => {
    const { edge, input, state } = await edgeShovel({
      'dest-uri': 'amqp://',
      'dest-queue': 'out',
      'src-delete-after': 3,
    });
    const counts = (s: Record<string, unknown>) => [s.forwarded, s.remaining, s.remaining_unacked];
    expect(counts(await state((s) => s.state === 'running', 'the shovel running'))).toEqual([
      0, 3, 3,
    ]);
    await input.publish('a');
    expect(counts(await state((s) => s.remaining === 2, 'one moved'))).toEqual([1, 2, 2]);
    await input.publish('b');
    expect(counts(await state((s) => s.remaining === 1, 'two moved'))).toEqual([2, 1, 1]);
    await input.publish('c');
    await poll(
      () => api(edge.getManagementUrl(), 'GET', '/api/shovels/vhost/%2F/up'),
      (answer) => answer.status === 404,
      'the shovel deleted after three',
    );
    expect((await edge.broker.queue('out', { passive: true })).messageCount).toBe(3);
  });

  test('a terminated shovel shows no counts, as RabbitMQ 4.x', async () => {
    const { state } = await edgeShovel({
      'dest-uri': 'amqp://127.0.0.1:1',
      'dest-queue': 'out',
      'reconnect-delay': 0,
    });
    const terminated = await state((s) => s.state === 'terminated', 'the shovel terminated');
    expect(Object.keys(terminated)).toEqual([
      'node',
      'timestamp',
      'name',
      'vhost',
      'type',
      'state',
      'reason',
    ]);
  });
});
