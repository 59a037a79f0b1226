import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeMethod } from '../../../src/server/frame-rules.js';
import { Writer } from '../../../src/server/wire/bytes.js';
import { writeMethod } from '../../../src/server/wire/methods.js';
import { PublishReader } from '../../../src/server/wire/publish-method.js';

/** The payload of a basic.publish method frame. */
function publishPayload(args: {
  exchange: string;
  routingKey: string;
  mandatory: boolean;
  immediate: boolean;
}): Buffer {
  const w = new Writer(512);
  writeMethod(w, 1, 'basic.publish', { ...args, reserved1: 0 });
  return Buffer.from(w.take().subarray(7, -1));
}

/** Reads `payload` placed inside other bytes, as a frame's payload sits in a read. */
function readIn(reader: PublishReader, payload: Buffer) {
  const bytes = Buffer.concat([Buffer.from([1, 2, 3]), payload, Buffer.from([0xce, 9])]);
  return reader.read(bytes, 3, 3 + payload.length);
}

const shortText = fc
  .string({ unit: 'grapheme', maxLength: 40 })
  .filter((s) => Buffer.byteLength(s) <= 255);

describe('basic.publish read in place', () => {
  test('reads what the generic decoder reads, message after message', () => {
    const reader = new PublishReader();
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            exchange: fc.oneof(fc.constant(''), fc.constant('amq.topic'), shortText),
            routingKey: fc.oneof(fc.constant('a.b'), fc.constant('a.c'), shortText),
            mandatory: fc.boolean(),
            immediate: fc.boolean(),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        (publishes) => {
          for (const args of publishes) {
            const payload = publishPayload(args);
            expect(readIn(reader, payload)).toEqual(decodeMethod(1, payload).method);
          }
        },
      ),
    );
  });

  test('a key of the same length with other bytes is read anew', () => {
    const reader = new PublishReader();
    const args = { exchange: 'x', mandatory: false, immediate: false };
    readIn(reader, publishPayload({ ...args, routingKey: 'key.1' }));
    expect(readIn(reader, publishPayload({ ...args, routingKey: 'key.2' }))?.args).toMatchObject({
      routingKey: 'key.2',
    });
  });

  test('leaves other methods and malformed arguments to the generic decoder', () => {
    const reader = new PublishReader();
    const payload = publishPayload({
      exchange: 'x',
      routingKey: 'k',
      mandatory: false,
      immediate: false,
    });
    expect(readIn(reader, Buffer.from([0, 60, 0, 80, 0, 0, 0, 0, 0, 0, 0, 1, 0]))).toBeUndefined();
    for (const bad of [payload.subarray(0, -1), Buffer.concat([payload, Buffer.from([0])])]) {
      expect(readIn(reader, bad)).toBeUndefined();
      expect(decodeMethod(1, bad).error?.replyCode).toBe(501);
    }
  });
});
