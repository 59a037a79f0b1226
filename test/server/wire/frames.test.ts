import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { Writer } from '../../../src/server/wire/bytes.js';
import { FrameError, FrameParser } from '../../../src/server/wire/frames.js';
import { writeMethod } from '../../../src/server/wire/methods.js';

interface Frame {
  type: number;
  channel: number;
  payload: string;
}

/** One frame's bytes: type, channel, size, payload, end marker. */
function frameBytes(type: number, channel: number, payload: Buffer): Buffer {
  const bytes = Buffer.alloc(8 + payload.length);
  bytes[0] = type;
  bytes.writeUInt16BE(channel, 1);
  bytes.writeUInt32BE(payload.length, 3);
  payload.copy(bytes, 7);
  bytes[7 + payload.length] = 0xce;
  return bytes;
}

function ackBytes(channel: number, tag: number, multiple: boolean): Buffer {
  const w = new Writer(64);
  writeMethod(w, channel, 'basic.ack', { deliveryTag: tag, multiple });
  return w.take();
}

const frameArb = fc.record({
  type: fc.constantFrom(1, 2, 3),
  channel: fc.integer({ min: 0, max: 3 }),
  payload: fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a).toString('hex')),
});

/** Pushes `stream` cut at `cuts`; returns every frame received, in order. */
function receive(stream: Buffer, cuts: number[], frameMax = 4096): Frame[] {
  const parser = new FrameParser(frameMax);
  const got: Frame[] = [];
  let from = 0;
  for (const to of [...cuts.sort((a, b) => a - b), stream.length]) {
    parser.push(stream.subarray(from, to), (type, channel, bytes, start, end) => {
      got.push({ type, channel, payload: bytes.toString('hex', start, end) });
      return true;
    });
    from = to;
  }
  expect(parser.buffered).toBe(0);
  return got;
}

describe('frames cut out of a byte stream', () => {
  test('every frame arrives whole and in order, however the reads split the stream', () => {
    fc.assert(
      fc.property(
        fc.array(frameArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (frames, rawCuts) => {
          const stream = Buffer.concat(
            frames.map((f) => frameBytes(f.type, f.channel, Buffer.from(f.payload, 'hex'))),
          );
          const cuts = rawCuts.map((c) => c % (stream.length + 1));
          expect(receive(stream, cuts)).toEqual(frames);
        },
      ),
    );
  });

  test('a stream read one byte at a time gives the same frames', () => {
    const frames: Frame[] = [
      { type: 1, channel: 1, payload: 'aabbcc' },
      { type: 3, channel: 1, payload: '' },
      { type: 2, channel: 2, payload: '00'.repeat(40) },
    ];
    const stream = Buffer.concat(
      frames.map((f) => frameBytes(f.type, f.channel, Buffer.from(f.payload, 'hex'))),
    );
    const cuts = Array.from({ length: stream.length - 1 }, (_, i) => i + 1);
    expect(receive(stream, cuts)).toEqual(frames);
  });

  test('a handler that returns false holds the frames after it until the next push', () => {
    const a = frameBytes(1, 1, Buffer.from('a'));
    const b = frameBytes(1, 1, Buffer.from('b'));
    const c = frameBytes(1, 1, Buffer.from('c'));
    const d = frameBytes(1, 1, Buffer.from('d'));
    const e = frameBytes(1, 1, Buffer.from('e'));
    const stream = Buffer.concat([a, b, c, d, e]);
    const parser = new FrameParser(4096);
    const got: string[] = [];
    let stopAt = 'b';
    const onFrame = (
      _type: number,
      _channel: number,
      bytes: Buffer,
      start: number,
      end: number,
    ) => {
      const payload = bytes.toString('utf8', start, end);
      got.push(payload);
      return payload !== stopAt;
    };
    // `b` straddles the two reads: it is completed from the held bytes, then stops.
    parser.push(stream.subarray(0, a.length + 3), onFrame);
    parser.push(stream.subarray(a.length + 3, -4), onFrame);
    expect(got).toEqual(['a', 'b']);
    expect(parser.buffered).toBe(c.length + d.length + e.length - 4);
    // Resumed by an empty push: the whole frames held go, the partial one waits for its end.
    stopAt = '';
    parser.push(Buffer.alloc(0), onFrame);
    expect(got).toEqual(['a', 'b', 'c', 'd']);
    expect(parser.buffered).toBe(e.length - 4);
    parser.push(stream.subarray(-4), onFrame);
    expect(got).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(parser.buffered).toBe(0);
  });

  test('acks split across reads reach the ack handler with their tag and flag', () => {
    const stream = Buffer.concat([ackBytes(1, 7, false), ackBytes(2, 2 ** 40 + 5, true)]);
    for (let cut = 1; cut < stream.length; cut++) {
      const parser = new FrameParser(4096);
      const acks: [number, number, boolean][] = [];
      const onAck = (channel: number, tag: number, multiple: boolean) => {
        acks.push([channel, tag, multiple]);
        return true;
      };
      const onFrame = () => {
        throw new Error('an ack went to the frame handler');
      };
      parser.push(stream.subarray(0, cut), onFrame, onAck);
      parser.push(stream.subarray(cut), onFrame, onAck);
      expect(acks).toEqual([
        [1, 7, false],
        [2, 2 ** 40 + 5, true],
      ]);
    }
  });

  test('a frame larger than frame-max is refused as soon as its size is read, across reads', () => {
    const big = frameBytes(3, 1, Buffer.alloc(200));
    for (const cut of [2, 6, 7, 100]) {
      const parser = new FrameParser(100);
      const push = () => {
        parser.push(big.subarray(0, cut), () => true);
        parser.push(big.subarray(cut), () => true);
      };
      expect(push).toThrow(FrameError);
      expect(push).toThrow('{frame_too_large,200,92}');
    }
  });

  test('a frame without its end marker is refused, also when completed by a later read', () => {
    const bad = frameBytes(1, 1, Buffer.from('xyz'));
    bad[bad.length - 1] = 0;
    const parser = new FrameParser(4096);
    parser.push(bad.subarray(0, 5), () => true);
    expect(() => parser.push(bad.subarray(5), () => true)).toThrow('frame end marker missing');
  });
});
