/**
 * A dead-lettered message leaves its queue on disk only once its copy is stored in the
 * dead-letter queue: a crash in between keeps it in one of the two.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { ManualClock, simulateCrash } from '../../../src/testing/index.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-dlx-crash-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;

const WORK = { arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'dlq' } };

async function bodies(broker: Broker, name: string): Promise<string[]> {
  const queue = await broker.queue(name, name === 'work' ? WORK : {});
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString());
  return out;
}

test.each(['rejected', 'expired'])(
  'a message dead-lettered (%s) just before a crash is in its queue or the dead-letter queue',
  async (reason) => {
    const dir = path.join(root, `t${++n}`);
    const clock = new ManualClock();
    const declaring = await Broker.open({ storage: fsStorage({ dir }), clock });
    await declaring.queue('dlq');
    await declaring.queue('work', WORK);
    await declaring.close();
    // The dead-letter queue's fsync rounds are an interval apart: its copy waits for the next.
    const storage = fsStorage({ dir, fsync: { intervalMs: 60_000 } });
    const broker = await Broker.open({ storage, clock });
    const dlq = await broker.queue('dlq');
    const work = await broker.queue('work', WORK);
    await dlq.publish('earlier');
    await work.publish('job', reason === 'expired' ? { expiration: '10' } : {});
    if (reason === 'expired') clock.advance(20);
    else void (await work.get({ noAck: false }))!.reject();
    void work.get(); // expires what is due
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    simulateCrash(storage);

    const reopened = await Broker.open({ storage: fsStorage({ dir }), clock });
    const kept = [...(await bodies(reopened, 'work')), ...(await bodies(reopened, 'dlq'))];
    expect(kept).toContain('job');
    await reopened.close();
  },
);
