import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { Confirms } from '../../src/server/confirms.js';
import { listen } from '../../src/server/server.js';
import { Writer } from '../../src/server/wire/bytes.js';
import { writeContent } from '../../src/server/wire/methods.js';
import { fsStorage } from '../../src/storage/fs/index.js';
import { holdFsyncs } from '../support/held-fsyncs.js';
import { RawClient } from './raw-client.js';
import { consume, declareQueue } from './raw-methods.js';
import { storageTargets } from './wire-targets.js';

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

describe.each(storageTargets())('confirm order on $name', (target) => {
  test('a transient message is confirmed before the consumer on the same connection gets it', async () => {
    const client = await RawClient.open(target.port);
    try {
      await client.openChannel(1);
      await client.openChannel(2);
      client.sendMethod(1, 'confirm.select', { nowait: false });
      await client.method('confirm.select-ok', 1);
      declareQueue(client, 2, '', { exclusive: true });
      const { queue } = (await client.method('queue.declare-ok', 2)).args as { queue: string };
      consume(client, 2, queue, 'c', { noAck: true });
      await client.method('basic.consume-ok', 2);
      let confirmFirst = 0;
      for (let i = 1; i <= 50; i++) {
        client.publish(1, '', queue, `m${i}`);
        const first = await client.frame(
          (f) =>
            (f.channel === 1 && f.method?.name === 'basic.ack') ||
            (f.channel === 2 && f.method?.name === 'basic.deliver'),
          'a confirm or a delivery',
        );
        if (first.method!.name === 'basic.ack') confirmFirst++;
        await client.method(first.method!.name === 'basic.ack' ? 'basic.deliver' : 'basic.ack');
      }
      // RabbitMQ confirms first as a rule (its queue confirms, then delivers, through two
      // processes, so not always: 45 to 50 of 50 here); mqlite always does.
      if (target.name === 'rabbitmq') expect(confirmFirst).toBeGreaterThan(25);
      else expect(confirmFirst).toBe(50);
    } finally {
      client.destroy();
    }
  });
});

describe('confirms on fs storage whose fsyncs are held', () => {
  test('a persistent message to a durable queue is confirmed once on disk; a transient one once routed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mqlite-confirms-'));
    const fsyncs = holdFsyncs();
    const broker = await Broker.open({ storage: fsStorage({ dir, io: fsyncs.io }) });
    const server = await listen(broker);
    const client = await RawClient.open(server.port);
    try {
      await broker.queue('durable-q', { durable: true });
      await client.openChannel(1);
      client.sendMethod(1, 'confirm.select', { nowait: false });
      await client.method('confirm.select-ok', 1);
      fsyncs.hold();
      client.sendMethod(1, 'basic.publish', {
        reserved1: 0,
        exchange: '',
        routingKey: 'durable-q',
        mandatory: false,
        immediate: false,
      });
      const w = new Writer();
      writeContent(w, 1, { deliveryMode: 2 }, Buffer.from('kept'), 131072);
      client.send(w.take());
      // The transient one after it is confirmed once routed, but after the one before it.
      client.publish(1, '', 'durable-q', 'transient');
      await until(() => fsyncs.held > 0, 'an fsync');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(client.count((f) => f.method?.name === 'basic.ack')).toBe(0);
      fsyncs.release();
      const ack = await client.method('basic.ack', 1);
      expect(ack.args).toMatchObject({ deliveryTag: 2, multiple: true });
      fsyncs.hold();
      client.publish(1, '', 'durable-q', 'transient');
      expect((await client.method('basic.ack', 1)).args).toMatchObject({ deliveryTag: 3 });
    } finally {
      fsyncs.release();
      client.destroy();
      await server.close();
      await broker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function until(done: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 15_000;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
