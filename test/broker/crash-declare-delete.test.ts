/**
 * A power cut at any step of declaring or deleting a durable queue, on the fs adapter: the queue
 * is then there whole or not at all, nothing is reported lost or damaged (nothing a caller was
 * promised is gone: the declare or delete had not resolved), and the queues declared before keep
 * every publish that resolved. Each test runs the operation once on a disk that forgets what was
 * not fsynced (test/support/power-loss-disk.ts), then reopens every distinct disk a crash after
 * each of its steps may leave.
 */
import { afterAll, describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { tempDir as freshDir, removeDataDirs } from '../support/data-dirs.js';
import { type CrashState, distinctStates, PowerLossDisk } from '../support/power-loss-disk.js';

afterAll(removeDataDirs);

const KINDS = {
  classic: { durable: true },
  priority: { durable: true, arguments: { 'x-max-priority': 5 } },
  stream: { durable: true, arguments: { 'x-queue-type': 'stream' } },
  lvq: { durable: true, arguments: { 'qpid.last_value_queue_key': 'k' } },
} as const;
type Kind = keyof typeof KINDS;

/** What each kind is published: a priority queue's messages open a level of their own. */
const published = (kind: Kind, i: number) =>
  kind === 'priority'
    ? { priority: 1 + (i % 5) }
    : kind === 'lvq'
      ? { headers: { k: `k${i}` } }
      : {};

const BEFORE = ['one', 'two', 'three'];

async function openBroker(disk: PowerLossDisk, errors: unknown[]): Promise<Broker> {
  const storage = fsStorage({ dir: disk.root, io: disk.io, fsync: 'always' });
  return Broker.open({ storage, onError: (error) => errors.push(error) });
}

/** Bodies of the messages of `queue` (taken: every crash state is reopened on a disk of its own). */
async function bodies(broker: Broker, name: string, kind: Kind): Promise<string[]> {
  const queue = await broker.queue(name, KINDS[kind]);
  if (kind === 'stream') {
    return [
      ...(queue as { read(from: 'first'): Iterable<{ message: { body: Uint8Array } }> }).read(
        'first',
      ),
    ].map(({ message }) => Buffer.from(message.body).toString('utf8'));
  }
  const got: string[] = [];
  for (let m = await queue.get({ noAck: true }); m; m = await queue.get({ noAck: true })) {
    got.push(m.bodyString());
  }
  return got.sort();
}

/**
 * Reopens `state` and checks it: nothing reported, nothing damaged, the queue `kept` with its
 * messages, and `check` on what became of the queue the crash cut short.
 */
async function reopen(
  dir: string,
  state: CrashState,
  check: (broker: Broker, present: boolean) => Promise<void>,
): Promise<void> {
  const errors: unknown[] = [];
  const broker = await openBroker(new PowerLossDisk(dir, state.inodes), errors).catch((error) => {
    throw new Error(`${state.label}: the broker did not open: ${String(error)}`);
  });
  try {
    expect(errors.map(String), state.label).toEqual([]);
    expect(broker.damaged(), state.label).toEqual([]);
    expect(await bodies(broker, 'kept', 'classic'), state.label).toEqual([...BEFORE].sort());
    const present = broker.queues().some((q) => q.name === 'subject');
    await check(broker, present);
    expect(errors.map(String), state.label).toEqual([]);
  } finally {
    await broker.close();
  }
}

/** A disk holding the queue `kept` with its resolved messages (and `subject` when given). */
async function prepared(
  dir: string,
  subject?: Kind,
): Promise<{ disk: PowerLossDisk; broker: Broker }> {
  const disk = new PowerLossDisk(dir);
  const errors: unknown[] = [];
  const broker = await openBroker(disk, errors);
  const kept = await broker.queue('kept', KINDS.classic);
  for (const body of BEFORE) await kept.publish(body);
  if (subject) {
    const queue = await broker.queue('subject', KINDS[subject]);
    for (const [i, body] of BEFORE.entries()) await queue.publish(body, published(subject, i));
  }
  expect(errors).toEqual([]);
  return { disk, broker };
}

describe.each(Object.keys(KINDS) as Kind[])('a power cut while a durable %s queue', (kind) => {
  test('is declared leaves it whole and empty or not there, and reports nothing', async () => {
    const dir = freshDir();
    const { disk, broker } = await prepared(dir);
    disk.record();
    const queue = await broker.queue('subject', KINDS[kind]);
    // A priority queue opens a level's log on its first message there: part of creating it too.
    if (kind === 'priority') await queue.publish('first', published(kind, 1));
    const states = disk.crashStates();
    await broker.close();
    expect(states.length).toBeGreaterThan(20);
    for (const state of distinctStates(states)) {
      await reopen(dir, state, async (reopened, present) => {
        if (!present) return;
        const held = await bodies(reopened, 'subject', kind);
        expect(held, state.label).toEqual(kind === 'priority' ? held.slice(0, 1) : []);
        if (held.length > 0) expect(held, state.label).toEqual(['first']);
      });
    }
  }, 120_000);

  test('is deleted leaves it whole or gone, and reports nothing', async () => {
    const dir = freshDir();
    const { disk, broker } = await prepared(dir, kind);
    disk.record();
    await broker.deleteQueue('subject');
    const states = disk.crashStates();
    await broker.close();
    for (const state of distinctStates(states)) {
      await reopen(dir, state, async (reopened, present) => {
        if (!present) return;
        const expected = kind === 'stream' ? BEFORE : [...BEFORE].sort();
        expect(await bodies(reopened, 'subject', kind), state.label).toEqual(expected);
      });
    }
  }, 120_000);
});
