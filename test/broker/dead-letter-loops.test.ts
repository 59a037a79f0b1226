import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { QueueDeclareOptions } from '../../src/broker/declare-options.js';
import type { Message } from '../../src/message/message.js';
import type { ClassicQueue } from '../../src/queues/classic/classic-queue.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';

/** Declare options that dead-letter to `target` through the default exchange. */
function to(target: string, options: QueueDeclareOptions = {}): QueueDeclareOptions {
  return { ...options, deadLetterExchange: '', deadLetterRoutingKey: target };
}

/** Lets microtasks and immediates run. */
function tick(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Every ready message of each queue as `body death/death…`, after checking its bookkeeping. */
async function contents(broker: Broker, ...names: string[]): Promise<string[][]> {
  await tick();
  const all: string[][] = [];
  for (const name of names) {
    const q = (await broker.queue(name, { passive: true })) as ClassicQueue;
    q.assertConsistent();
    const got: string[] = [];
    for (let m = await q.get(); m !== null; m = await q.get()) got.push(show(m));
    all.push(got);
  }
  return all;
}

function show(m: Message): string {
  const deaths = (m.properties.headers?.['x-death'] ?? []) as Record<string, unknown>[];
  return [m.bodyString(), ...deaths.map((d) => `${String(d.queue)}/${String(d.reason)}`)].join(' ');
}

describe('dead-letter loops through the broker', () => {
  it("a closing session's unacked message goes round a loop of full queues once: q0 empty, q1 holds m14 and m7", async () => {
    const errors: unknown[] = [];
    await using broker = await Broker.open({ onError: (e) => errors.push(e) });
    await broker.queue('q0', to('q1', { maxLength: 0 }));
    const q1 = await broker.queue('q1', to('q0', { maxLength: 2 }));
    const session = broker.session();
    const q0 = await session.queue('q0', { passive: true });
    await q0.subscribe({ prefetch: 2, manualAck: true }, () => {});
    await q0.publish('m7');
    await q1.publish('m13');
    await q1.publish('m14');
    await session.close();
    expect(await contents(broker, 'q0', 'q1')).toEqual([[], ['m14', 'm7 q0/maxlen']]);
    expect(errors).toEqual([]);
  });

  it('reject-publish-dlx in a loop refuses the dead letter and sends it on, until it is back where it died', async () => {
    await using broker = await Broker.open();
    await broker.queue('q0', to('q1', { maxLength: 0 }));
    const q1 = await broker.queue('q1', to('q0', { maxLength: 1, overflow: 'reject-publish-dlx' }));
    await q1.publish('a');
    const held = await broker.queue('q0', { passive: true });
    await held.subscribe({ prefetch: 1, manualAck: true }, (m) => {
      void m.nack(true);
    });
    await held.publish('m');
    await tick();
    // m: delivered, requeued, dropped by q0's limit, refused by full q1 (dead-lettered back to
    // q0), and dropped there: it died in q0 before with no rejection since.
    expect(await contents(broker, 'q0', 'q1')).toEqual([[], ['a']]);
  });

  it('a dead letter fanned out to several queues of a loop goes on from each once', async () => {
    await using broker = await Broker.open();
    await broker.exchange('fan', 'fanout');
    await broker.queue('a', { maxLength: 0, deadLetterExchange: 'fan' });
    await broker.queue('b', to('a', { maxLength: 1 }));
    await broker.queue('c', to('a', { maxLength: 1 }));
    const b = await broker.queue('b', { passive: true });
    const c = await broker.queue('c', { passive: true });
    await b.bind('fan');
    await c.bind('fan');
    await b.publish('b1');
    await c.publish('c1');
    const a = await broker.queue('a', { passive: true });
    await a.publish('m');
    // m dies in a and reaches b and c, pushing b1 and c1 out into a, which drops each on to the
    // queue it did not die in, pushing out the copies of m, which had died in a before.
    expect(await contents(broker, 'a', 'b', 'c')).toEqual([
      [],
      ['c1 a/maxlen c/maxlen'],
      ['b1 a/maxlen b/maxlen'],
    ]);
  });

  it('a message rejected into a loop comes back to the queue it was refused by after a drop-head, as on RabbitMQ', async () => {
    await using broker = await Broker.open();
    const q0 = await broker.queue(
      'q0',
      to('q1', { maxLengthBytes: 0, overflow: 'reject-publish-dlx' }),
    );
    const q1 = await broker.queue('q1', to('q0', { maxLength: 1 }));
    await expect(q0.publish('m0')).rejects.toThrow(/full/);
    const m0 = await q1.get({ noAck: false });
    await m0!.nack(false);
    // m0, rejected, is refused by q0 and back in q1. m1 pushes it out to q0, which refuses it
    // again: its x-death, reordered at each death as RabbitMQ does, has q1's rejection before
    // q0's entry, so it is no cycle and returns to q1, pushing m1 out (a cycle: m1 died in q0).
    await expect(q0.publish('m1')).rejects.toThrow(/full/);
    expect(await contents(broker, 'q0', 'q1')).toEqual([
      [],
      ['m0 q0/maxlenbytes q1/rejected q1/maxlen'],
    ]);
  });

  it('a message rejected in a loop of three is dropped where it died by a limit with no rejection since', async () => {
    await using broker = await Broker.open();
    const q0 = await broker.queue(
      'q0',
      to('q1', { maxLength: 0, maxLengthBytes: 5, overflow: 'reject-publish-dlx' }),
    );
    await broker.queue('q1', to('q2', { maxLength: 0, maxLengthBytes: 2 }));
    const q2 = await broker.queue('q2', to('q0', { maxLength: 2, maxLengthBytes: 7 }));
    const got: string[] = [];
    await q2.subscribe({ prefetch: 1, manualAck: true }, (m) => {
      // Only the first is rejected: a message that came back would be acked and kept here.
      void (got.push(show(m)) === 1 ? m.reject(false) : m.ack());
    });
    await expect(q0.publish('m0')).rejects.toThrow(/full/);
    await tick();
    // Back in q0 its x-death reads q0/maxlen q1/maxlen q2/rejected: q1 follows q0's entry with
    // no rejection between, so the dead letter to q1 closes a cycle.
    expect(got).toEqual(['m0 q1/maxlen q0/maxlen']);
    expect(await contents(broker, 'q0', 'q1', 'q2')).toEqual([[], [], []]);
  });

  it('a consumer freed by a reject gets its turn after the consumer served before it, though the reject sends a message back first', async () => {
    await using broker = await Broker.open();
    const q0 = await broker.queue('q0', to('q1', { maxLength: 2, maxLengthBytes: 8 }));
    const q1 = await broker.queue('q1', to('q0', { maxLength: 1, overflow: 'reject-publish-dlx' }));
    const got: string[] = [];
    const held: Message[] = [];
    const consumer = (tag: string) => (m: Message) => {
      got.push(`${tag} ${m.bodyString()}`);
      held.push(m);
    };
    // Each step waits for its dead letters to arrive, as a client waits for the broker.
    const step = async (action: () => Promise<unknown>) => {
      await action();
      await tick();
    };
    await step(() => q0.publish('m0'));
    await step(() => q0.publish('m1'));
    await step(() => q1.subscribe({ prefetch: 1, manualAck: true }, consumer('c0')));
    await step(() => q0.publish('m2'));
    await step(() => q1.subscribe({ prefetch: 2, manualAck: true }, consumer('c1')));
    await step(() => q0.publish('m3'));
    await step(() => held[1]!.ack());
    // c0, found full when m1 came, rejoins the line behind c1 as its reject frees it, before
    // m0, dead-lettered to q0, pushes m2 out to q1: c1 takes m2, and c0 is next for m3.
    await step(() => held[0]!.reject(false));
    await step(() => q0.publish('m4'));
    expect(got).toEqual(['c0 m0', 'c1 m1', 'c1 m2', 'c0 m3']);
  });

  it('a policy lowering the limit of a loop queue drops each head once', async () => {
    await using broker = await Broker.open();
    const q0 = await broker.queue('q0', to('q1'));
    const q1 = await broker.queue('q1', to('q0', { maxLength: 1 }));
    await q1.publish('b');
    for (const body of ['a1', 'a2', 'a3']) await q0.publish(body);
    await broker.setPolicy('shrink', { pattern: '^q0$', definition: { 'max-length': 0 } });
    expect(await contents(broker, 'q0', 'q1')).toEqual([[], ['a3 q0/maxlen']]);
  });

  it('messages that expired while the broker was closed are dead-lettered into queues that open after theirs', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'mqlite-dl-loop-'));
    try {
      const clock = new ManualClock();
      const open = () => Broker.open({ clock, storage: fsStorage({ dir, fsync: 'never' }) });
      {
        await using broker = await open();
        const q0 = await broker.queue('q0', to('q1', { durable: true, messageTtl: 10 }));
        await broker.queue('q1', to('q0', { durable: true, maxLength: 1 }));
        await q0.publish('m1', { deliveryMode: 2 });
        await q0.publish('m2', { deliveryMode: 2 });
      }
      clock.advance(10);
      await using broker = await open();
      await broker.queue('q0', to('q1', { durable: true, messageTtl: 10 }));
      await broker.queue('q1', to('q0', { durable: true, maxLength: 1 }));
      // Both reach q1, opened after q0: m2 pushes m1 out, which had died in q0 before.
      expect(await contents(broker, 'q0', 'q1')).toEqual([[], ['m2 q0/expired']]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
