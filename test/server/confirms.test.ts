import { describe, expect, test } from 'vitest';
import { Confirms } from '../../src/server/confirms.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

function recorder() {
  const sent: string[] = [];
  const confirms = new Confirms((kind, tag, multiple) =>
    sent.push(`${kind} ${tag}${multiple ? ' multiple' : ''}`),
  );
  return { sent, confirms };
}

describe('publisher confirms', () => {
  test('a run of acks settled together is one ack with multiple', async () => {
    const { sent, confirms } = recorder();
    const seqs = [confirms.take(), confirms.take(), confirms.take()];
    for (const seq of seqs) confirms.settle(seq, true);
    await turn();
    expect(sent).toEqual(['ack 3 multiple']);
  });

  test('an ack waits for the publishes before it', async () => {
    const { sent, confirms } = recorder();
    const [a, b] = [confirms.take(), confirms.take()];
    confirms.settle(b, true);
    await turn();
    expect(sent).toEqual([]);
    expect(confirms.outstanding).toBe(2);
    confirms.settle(a, true);
    await turn();
    expect(sent).toEqual(['ack 2 multiple']);
    expect(confirms.outstanding).toBe(0);
  });

  test('a nack splits the run', async () => {
    const { sent, confirms } = recorder();
    const seqs = [1, 2, 3, 4].map(() => confirms.take());
    confirms.settle(seqs[0]!, true);
    confirms.settle(seqs[1]!, true);
    confirms.settle(seqs[2]!, false);
    confirms.settle(seqs[3]!, true);
    await turn();
    expect(sent).toEqual(['ack 2 multiple', 'nack 3', 'ack 4']);
  });
});
