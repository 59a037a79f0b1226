/**
 * Frames a client writes one after the other may reach the server in one read, or in several:
 * how they are split must not change what they do.
 */
import { describe, expect, test } from 'vitest';
import { Writer } from '../../src/server/wire/bytes.js';
import { methodFrame, writeContent } from '../../src/server/wire/methods.js';
import { RawClient } from './raw-client.js';
import { consume, declareQueue } from './raw-methods.js';
import { servedBroker } from './served.js';

const served = servedBroker();

/** A publish's method and content frames, through the default exchange. */
function publishFrames(channel: number, queue: string, body: string): Buffer {
  const w = new Writer();
  writeContent(w, channel, {}, Buffer.from(body), 131072);
  return Buffer.concat([
    methodFrame(channel, 'basic.publish', {
      reserved1: 0,
      exchange: '',
      routingKey: queue,
      mandatory: false,
      immediate: false,
    }),
    w.take(),
  ]);
}

/** Waits for the next delivery on `channel` and returns its tag and body. */
async function delivery(client: RawClient, channel: number) {
  const deliver = await client.method('basic.deliver', channel);
  const body = await client.frame((f) => f.type === 3 && f.channel === channel, 'a body frame');
  const { deliveryTag } = deliver.args as { deliveryTag: number };
  return { deliveryTag, body: body.payload.toString() };
}

describe('frames read from one chunk', () => {
  test('a publish read together with the nack before it goes to the consumer the nack freed, as read apart', async () => {
    const client = await RawClient.open(served.server.port);
    try {
      await client.openChannel(1);
      await client.openChannel(2);
      declareQueue(client, 1, 'read-together', {
        exclusive: true,
        arguments: { 'x-max-length': 0 },
      });
      await client.method('queue.declare-ok', 1);
      client.sendMethod(1, 'basic.qos', { prefetchSize: 0, prefetchCount: 1, global: false });
      await client.method('basic.qos-ok', 1);
      consume(client, 1, 'read-together', 'c1');
      await client.method('basic.consume-ok', 1);
      client.send(publishFrames(2, 'read-together', 'm1'));
      const m1 = await delivery(client, 1);
      expect(m1.body).toBe('m1');

      // The requeue of m1 and the publish of m2 in one write: one read on the server.
      const nack = methodFrame(1, 'basic.nack', {
        deliveryTag: m1.deliveryTag,
        multiple: false,
        requeue: true,
      });
      client.send(Buffer.concat([nack, publishFrames(2, 'read-together', 'm2')]));
      const m2 = await delivery(client, 1);
      expect(m2.body).toBe('m2');
    } finally {
      client.destroy();
    }
  });
});
