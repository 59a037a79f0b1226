import { describe, expect, it } from 'vitest';
import type { Message } from '../../../src/message/message.js';
import type { ClassicQueue } from '../../../src/queues/classic/classic-queue.js';
import { collector, queuesPerTest, STORAGE_KINDS, settle } from './support.js';

/** Arguments dead-lettering to `target` through the default exchange. */
function to(target: string, args: Record<string, unknown> = {}) {
  return {
    arguments: { ...args, 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': target },
  };
}

/** The `x-death` entries of a message as `queue/reason` strings, newest first. */
function deaths(message: Message): string[] {
  const entries = (message.properties.headers?.['x-death'] ?? []) as Record<string, unknown>[];
  return entries.map((d) => `${String(d.queue)}/${String(d.reason)}`);
}

/** Takes every ready message (no-ack) with its x-death entries. */
async function drainDeaths(queue: ClassicQueue): Promise<[string, string[]][]> {
  const got: [string, string[]][] = [];
  for (let m = await queue.get(); m !== null; m = await queue.get()) {
    got.push([m.bodyString(), deaths(m)]);
  }
  return got;
}

describe.each(STORAGE_KINDS)('dead-letter loops between full queues on %s storage', (kind) => {
  const queues = queuesPerTest(kind);

  /**
   * q0 holds nothing and dead-letters to q1; q1 holds two and dead-letters back to q0. A consumer
   * of q0 holds m7; q1 is full with m13 and m14.
   */
  async function loopOfTwo(q1Args: Record<string, unknown> = {}, q1Holds = ['m13', 'm14']) {
    const q0 = await queues.fifo('q0', to('q1', { 'x-max-length': 0 }));
    const q1 = await queues.fifo('q1', to('q0', { 'x-max-length': 2, ...q1Args }));
    const c1 = collector();
    const consumer = await q0.subscribe({ prefetch: 2, manualAck: true }, c1.callback);
    await q0.publish('m7');
    expect(c1.bodies()).toEqual(['m7']);
    for (const body of q1Holds) await q1.publish(body);
    return { q0, q1, c1, consumer };
  }

  /**
   * Once every hop is done: checks each queue's bookkeeping and that nothing failed, then takes
   * every ready message of each, with its x-death entries.
   */
  async function contents(...qs: ClassicQueue[]): Promise<[string, string[]][][]> {
    await settle();
    for (const q of qs) q.assertConsistent();
    expect(queues.errors).toEqual([]);
    const all: [string, string[]][][] = [];
    for (const q of qs) all.push(await drainDeaths(q));
    return all;
  }

  /** q0 empty, q1 holding m14 and m7 (which died in q0 by its length limit). */
  const m14m7: [string, string[]][][] = [
    [],
    [
      ['m14', []],
      ['m7', ['q0/maxlen']],
    ],
  ];

  it('a requeue into a loop of full queues drops the head into the other queue once, as RabbitMQ does', async () => {
    const { q0, q1, c1, consumer } = await loopOfTwo();
    await c1.received[0]!.nack(true);
    await settle();
    await consumer.cancel();
    // m13 went round the loop into q0, empty, whose consumer had room, as on RabbitMQ.
    expect(c1.bodies()).toEqual(['m7', 'm13']);
    expect(deaths(c1.received[1]!)).toEqual(['q1/maxlen']);
    expect(await contents(q0, q1)).toEqual(m14m7);
  });

  it("a closing consumer's requeue into the loop leaves q0 empty and q1 holding m14 and m7", async () => {
    const { q0, q1, consumer } = await loopOfTwo();
    await consumer.close();
    expect(await contents(q0, q1)).toEqual(m14m7);
  });

  it('with drop-head stated the loop ends the same way', async () => {
    const { q0, q1, consumer } = await loopOfTwo({ 'x-overflow': 'drop-head' });
    await consumer.close();
    expect(await contents(q0, q1)).toEqual(m14m7);
  });

  it('with q1 at x-max-length 1 holding one message the loop ends with q1 holding m7', async () => {
    const { q0, q1, consumer } = await loopOfTwo({ 'x-max-length': 1 }, ['m13']);
    await consumer.close();
    expect(await contents(q0, q1)).toEqual([[], [['m7', ['q0/maxlen']]]]);
  });

  it('a loop of three full queues passes each dropped head on once and drops it where it died before', async () => {
    const q0 = await queues.fifo('q0', to('q1', { 'x-max-length': 0 }));
    const q1 = await queues.fifo('q1', to('q2', { 'x-max-length': 1 }));
    const q2 = await queues.fifo('q2', to('q0', { 'x-max-length': 1 }));
    await q1.publish('a');
    await q2.publish('b');
    const held = await q0.subscribe({ prefetch: 1, manualAck: true }, () => {});
    await q0.publish('m');
    await held.close();
    // m pushes a out of q1, a pushes b out of q2; b reaches q0, which has no consumer now and
    // drops it into q1, where it pushes m out into q2; m pushes a out into q0, which drops it:
    // a died in q1 before, so it goes no further.
    expect(await contents(q0, q1, q2)).toEqual([
      [],
      [['b', ['q0/maxlen', 'q2/maxlen']]],
      [['m', ['q1/maxlen', 'q0/maxlen']]],
    ]);
  });

  it('a publish into a loop of full queues leaves each queue whole', async () => {
    const q0 = await queues.fifo('q0', to('q1', { 'x-max-length': 0 }));
    const q1 = await queues.fifo('q1', to('q0', { 'x-max-length': 2 }));
    await q1.publish('m13');
    await q1.publish('m14');
    await q0.publish('m7');
    expect(await contents(q0, q1)).toEqual(m14m7);
  });

  it('expiring messages into a loop of queues with TTLs stops where a message died before', async () => {
    const q0 = await queues.fifo('q0', to('q1', { 'x-message-ttl': 10 }));
    const q1 = await queues.fifo('q1', to('q0', { 'x-message-ttl': 10 }));
    // Each queue's store has its log open: a dead letter is then stored as it arrives.
    await q1.publish('first');
    await q1.get();
    await q0.publish('m');
    queues.clock.advance(10);
    expect(await q0.get()).toBeNull();
    expect(q1.messageCount).toBe(1);
    queues.clock.advance(10);
    expect(await q1.get()).toBeNull();
    // m expired in q0, then in q1; back into q0, where it died before, it goes no further.
    expect(await contents(q0, q1)).toEqual([[], []]);
  });

  it('a lower limit applied to a queue of a loop drops its heads once each', async () => {
    const q0 = await queues.fifo('q0', to('q1'));
    const q1 = await queues.fifo('q1', to('q0', { 'x-max-length': 1 }));
    await q1.publish('b');
    for (const body of ['a1', 'a2', 'a3']) await q0.publish(body);
    await q0.applyLimits({ ...q0.limits, maxLength: 0 });
    // a1 pushes b into q0, which drops it at once: b died in q1 before, so it goes no further
    // (nor do a1 and a2, pushed out by a2 and a3).
    expect(await contents(q0, q1)).toEqual([[], [['a3', ['q0/maxlen']]]]);
  });
});
