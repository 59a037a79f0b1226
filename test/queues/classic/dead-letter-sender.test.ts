import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import type { Message } from '../../../src/message/message.js';
import { DEAD_LETTER_RETRY_MS } from '../../../src/queues/classic/dead-letter-sender.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { ManualClock } from '../../../src/testing/manual-clock.js';

/** A quorum queue dead-lettering at-least-once through `dlx` (a direct exchange) to `key`. */
function atLeastOnce(extra: Record<string, unknown> = {}) {
  return {
    arguments: {
      'x-queue-type': 'quorum',
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
      'x-dead-letter-exchange': 'dlx',
      'x-dead-letter-routing-key': 'dead',
      ...extra,
    },
  };
}

async function reject(queue: { get(o: { noAck: boolean }): Promise<Message | null> }) {
  const message = await queue.get({ noAck: false });
  await message?.reject(false);
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('at-least-once dead-lettering of a quorum queue', () => {
  it('keeps a dead letter no queue takes, counting it against the limit, and retries it', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    const jobs = await broker.queue('jobs', atLeastOnce({ 'x-max-length': 1 }));
    await jobs.publish('a');
    await reject(jobs);
    expect(jobs.messageCount).toBe(0);
    // The held dead letter fills the one place: a quorum queue refuses once past its limit.
    await jobs.publish('b');
    await expect(jobs.publish('c')).rejects.toMatchObject({ code: 'MQLITE_QUEUE_FULL' });
    await broker.exchange('dlx', 'direct');
    const dead = await broker.queue('dead');
    await dead.bind('dlx', 'dead');
    clock.advance(DEAD_LETTER_RETRY_MS - 1);
    expect(await dead.get()).toBeNull();
    clock.advance(1);
    await expect.poll(() => dead.messageCount).toBe(1);
    expect((await dead.get())?.bodyString()).toBe('a');
    expect((await jobs.get())?.bodyString()).toBe('b');
    await jobs.publish('c');
  });

  it('retries only the target that refused it, until it has room', async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    await broker.exchange('dlx', 'fanout');
    const roomy = await broker.queue('roomy');
    const full = await broker.queue('full', {
      arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' },
    });
    await roomy.bind('dlx');
    await full.bind('dlx');
    await full.publish('filler');
    const jobs = await broker.queue('jobs', atLeastOnce());
    await jobs.publish('a');
    await reject(jobs);
    await expect.poll(() => roomy.messageCount).toBe(1);
    expect(full.messageCount).toBe(1);
    await full.purge();
    clock.advance(DEAD_LETTER_RETRY_MS);
    await expect.poll(() => full.messageCount).toBe(1);
    expect(roomy.messageCount).toBe(1);
    expect((await full.get())?.bodyString()).toBe('a');
  });

  it('drops a dead letter no queue takes with the default at-most-once strategy', async () => {
    await using broker = await Broker.open();
    const jobs = await broker.queue(
      'jobs',
      atLeastOnce({ 'x-max-length': 1, 'x-dead-letter-strategy': 'at-most-once' }),
    );
    await jobs.publish('a');
    await reject(jobs);
    await jobs.publish('b');
    await jobs.publish('c');
    expect(jobs.messageCount).toBe(2);
  });

  it('keeps an unconfirmed dead letter in the source across a restart on fs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-alo-'));
    dirs.push(dir);
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      const jobs = await broker.queue('jobs', atLeastOnce());
      await jobs.publish('a');
      await reject(jobs);
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    const jobs = await broker.queue('jobs', atLeastOnce());
    const back = await jobs.get();
    expect(back?.bodyString()).toBe('a');
    expect(back?.redelivered).toBe(true);
  });
});
