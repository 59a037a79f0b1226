/**
 * Waiting and asserting helpers shared by the scenarios. All waiting in the parity suite happens
 * here: polls with a deadline, never fixed sleeps longer than the behaviour under test needs.
 */

import type { AMQPMessage, QueueSubscribeParams } from '@cloudamqp/amqp-client';
import { expect } from 'vitest';
import type { ParityContext, ParityQueue } from './types.js';

/** How long a poll waits before failing. Generous: CI machines are slow, success is fast. */
const DEADLINE_MS = 15_000;
const POLL_MS = 5;

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calls `read` until `done(value)` holds, and returns that value; fails naming `what` after the
 * deadline, with the last value read.
 */
export async function eventually<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  what: string,
  deadlineMs = DEADLINE_MS,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > end) {
      throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}; last: ${show(value)}`);
    }
    await sleep(POLL_MS);
  }
}

function show(value: unknown): string {
  try {
    return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v));
  } catch {
    return String(value);
  }
}

/** The AMQP reply code of an error: `replyCode` (mqlite) or the `(406)` the client appends. */
export function replyCodeOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { replyCode?: unknown }).replyCode;
  if (typeof code === 'number') return code;
  const match = /\((\d{3})\)\s*$/.exec(String((err as { message?: unknown }).message));
  return match ? Number(match[1]) : undefined;
}

/**
 * Expects `action` to fail with an AMQP reply code and, when given, a message containing `text`
 * (both RabbitMQ and mqlite write "PRECONDITION_FAILED - inequivalent arg ...").
 */
export async function expectAmqpError(
  action: Promise<unknown>,
  replyCode: number,
  text?: string | RegExp,
): Promise<void> {
  const err = await action.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err === undefined) throw new Error(`expected an AMQP error ${replyCode}, but it succeeded`);
  expect(replyCodeOf(err), String(err)).toBe(replyCode);
  if (text !== undefined) expect((err as Error).message).toMatch(text);
}

/** Pulls every ready message with `get` (acked), returning their bodies as strings. */
export async function drain(queue: ParityQueue): Promise<string[]> {
  const bodies: string[] = [];
  for (let msg = await queue.get({ noAck: true }); msg; msg = await queue.get({ noAck: true })) {
    bodies.push(msg.bodyString() ?? '');
  }
  return bodies;
}

/** Publishes each body in order, awaiting each confirm. */
export async function publishAll(
  queue: { publish: ParityQueue['publish'] },
  bodies: readonly string[],
  properties: Parameters<ParityQueue['publish']>[1] = {},
): Promise<void> {
  for (const body of bodies) await queue.publish(body, properties);
}

/**
 * A subscription that records what it receives, settling each message with `settle` (default:
 * ack; nothing for `noAck`). `received` fills as deliveries arrive; `waitFor(n)` polls until n arrived.
 */
export async function recorder(
  queue: ParityQueue,
  params: QueueSubscribeParams,
  settle: (msg: AMQPMessage) => Promise<void> | void = (msg) => msg.ack(),
) {
  const received: AMQPMessage[] = [];
  const noAck = params.noAck === true;
  const sub = await queue.subscribe({ ...params, manualAck: !noAck }, async (msg) => {
    received.push(msg);
    if (!noAck) await settle(msg);
  });
  return {
    received,
    bodies: () => received.map((m) => m.bodyString() ?? ''),
    waitFor: (n: number, what = `${n} deliveries`) =>
      eventually(
        () => received.length,
        (len) => len >= n,
        what,
      ),
    cancel: () => sub.cancel(),
  };
}

/**
 * Waits until the broker has applied a settlement of `msg` (ack, nack, reject), which has no
 * reply: a round trip on the channel it arrived on, as commands on one channel reach the queue in
 * order. mqlite settles synchronously: nothing to wait for.
 */
export async function settled(msg: AMQPMessage): Promise<void> {
  const channel = (msg as { channel?: AMQPMessage['channel'] }).channel;
  await channel?.exchangeDeclare('amq.direct', 'direct', { passive: true });
}

/** The message count a queue's `delete`/`purge` resolved with (a number on mqlite). */
export function countOf(result: unknown): number {
  return typeof result === 'number' ? result : (result as { messageCount: number }).messageCount;
}

/**
 * A recorder on a connection of its own that settles nothing: its messages go back to the queue
 * when that connection closes (`stop()`), as a consumer's whose process ends.
 */
export async function holder(ctx: ParityContext, queue: ParityQueue, prefetch: number) {
  const connection = await ctx.connection();
  const held = await recorder(
    await connection.queue(queue.name, { passive: true }),
    { prefetch },
    () => undefined,
  );
  return { ...held, stop: () => connection.stop() };
}
