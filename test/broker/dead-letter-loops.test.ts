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

  it('a rejected message dropped round a loop of queues that hold nothing is dropped when it closes a cycle, not sent round forever', async () => {
    await using broker = await Broker.open();
    const q0 = await broker.queue('q0', to('q1', { maxLength: 0 }));
    await broker.queue('q1', to('q0', { maxLength: 0 }));
    const held: Message[] = [];
    const consumer = await q0.subscribe({ prefetch: 1, manualAck: true }, (m) => {
      held.push(m);
    });
    await q0.publish('m');
    await consumer.cancel();
    // m dies rejected in q0, then by the limits of q1 and q0; back at q1 no rejection stands
    // between its deaths there and in q0. RabbitMQ 3.10, which reverses x-death's older entries
    // at each death, finds the rejection first every time and sends m round forever.
    await held[0]!.reject(false);
    expect(await contents(broker, 'q0', 'q1')).toEqual([[], []]);
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
