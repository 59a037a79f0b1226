import { describe, expect, test } from 'vitest';
import { EMPTY_PROPERTIES } from '../../../src/message/normalize.js';
import type { MessageProperties } from '../../../src/message/types.js';
import { Writer } from '../../../src/server/wire/bytes.js';
import {
  PropertiesCache,
  shortstrBytes,
  writeDelivery,
} from '../../../src/server/wire/delivery.js';
import { writeContent, writeMethod } from '../../../src/server/wire/methods.js';
import { ContentHeaderReader, writeContentHeader } from '../../../src/server/wire/properties.js';

const FRAME_MAX = 4096;

/** A delivery's frames as the generic method and content encoders write them. */
function generic(tag: number, properties: Readonly<MessageProperties>, body: Buffer): Buffer {
  const w = new Writer(256);
  writeMethod(w, 3, 'basic.deliver', {
    consumerTag: 'ctag',
    deliveryTag: tag,
    redelivered: tag % 2 === 0,
    exchange: 'ex',
    routingKey: 'rk',
  });
  writeContent(w, 3, properties, body, FRAME_MAX);
  return w.take();
}

function fast(
  cache: PropertiesCache,
  tag: number,
  properties: Readonly<MessageProperties>,
  body: Buffer,
): Buffer {
  const w = new Writer(16);
  writeDelivery(
    w,
    3,
    shortstrBytes('ctag'),
    tag,
    tag % 2 === 0,
    shortstrBytes('ex'),
    shortstrBytes('rk'),
    properties,
    body,
    FRAME_MAX,
    cache,
  );
  return w.take();
}

describe('deliveries written in one pass', () => {
  test('write the frames the generic encoders write, whatever properties come in turn', () => {
    const shared: MessageProperties = {
      contentType: 'text/plain',
      headers: { 'x-tenant': 'a', n: 7 },
      deliveryMode: 2,
      timestamp: new Date(1_700_000_000_000),
    };
    const other: MessageProperties = { messageId: 'm-1', priority: 3, headers: {} };
    const sequence = [
      EMPTY_PROPERTIES,
      shared,
      shared,
      shared,
      other,
      shared,
      EMPTY_PROPERTIES,
      other,
      other,
      { ...shared },
    ];
    const cache = new PropertiesCache();
    sequence.forEach((properties, i) => {
      // Bodies of no bytes, one frame, and more than one frame.
      const body = Buffer.alloc([0, 100, FRAME_MAX * 2 + 5][i % 3]!, i);
      expect(fast(cache, i + 1, properties, body)).toEqual(generic(i + 1, properties, body));
    });
  });
});

describe('content headers of one publisher', () => {
  function header(bodySize: number, properties: MessageProperties): Buffer {
    const w = new Writer(64);
    writeContentHeader(w, bodySize, properties);
    return w.take();
  }

  /** Reads `payload` placed inside other bytes, as a frame's payload sits in a read. */
  function readIn(reader: ContentHeaderReader, payload: Buffer) {
    const bytes = Buffer.concat([Buffer.from([1, 2, 3]), payload, Buffer.from([0xce, 9])]);
    reader.read(bytes, 3, 3 + payload.length);
    return { bodySize: reader.bodySize, properties: reader.properties };
  }

  test('the same property bytes read as the same properties, each header its own body size', () => {
    const reader = new ContentHeaderReader();
    const read = (payload: Buffer) => readIn(reader, payload);
    const properties = { contentType: 'text/plain', headers: { n: 1 } };
    const first = read(header(10, properties));
    const second = read(header(20, properties));
    expect(second.properties).toBe(first.properties);
    expect([first.bodySize, second.bodySize]).toEqual([10, 20]);
    const other = read(header(20, { ...properties, headers: { n: 2 } }));
    expect(other.properties).not.toBe(first.properties);
    expect(other.properties.headers).toEqual({ n: 2 });
    expect(read(header(5, properties)).properties.headers).toEqual({ n: 1 });
  });
});
