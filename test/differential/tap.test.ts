/** The differential test's frame check reports each way a server's output can be malformed. */
import { describe, expect, it } from 'vitest';
import { FrameChecker } from './tap.js';

function frame(type: number, channel: number, payload: Buffer, end = 0xce): Buffer {
  const header = Buffer.alloc(7);
  header.writeUInt8(type, 0);
  header.writeUInt16BE(channel, 1);
  header.writeUInt32BE(payload.length, 3);
  return Buffer.concat([header, payload, Buffer.from([end])]);
}

const method = frame(1, 1, Buffer.from([0, 60, 0, 40]));
const heartbeat = frame(8, 0, Buffer.alloc(0));

function problemsOf(...chunks: Buffer[]): string[] {
  const checker = new FrameChecker('connection 1');
  for (const chunk of chunks) checker.push(chunk);
  checker.end();
  return checker.problems;
}

describe('the frame check of the differential test', () => {
  it('passes whole frames, however the bytes are cut', () => {
    const bytes = Buffer.concat([method, heartbeat, method]);
    expect(problemsOf(bytes)).toEqual([]);
    expect(problemsOf(...[...bytes].map((b) => Buffer.from([b])))).toEqual([]);
  });

  it('reports a frame whose end marker is wrong, as a client sees "Invalid frame end 0"', () => {
    expect(problemsOf(method, frame(1, 1, Buffer.from([0, 60, 0, 40]), 0))).toEqual([
      'connection 1: frame 2: frame end 0, expected 206',
    ]);
  });

  it('reports an unknown type, a size above frame-max and a frame left half-written', () => {
    expect(problemsOf(frame(9, 1, Buffer.alloc(4)))[0]).toMatch(/unknown frame type 9/);
    expect(problemsOf(frame(3, 1, Buffer.alloc(131_072)))[0]).toMatch(/above frame-max/);
    expect(problemsOf(method.subarray(0, 9))[0]).toMatch(/ended inside a frame/);
  });

  it('reports frames that cannot carry what their type says', () => {
    expect(problemsOf(frame(1, 1, Buffer.alloc(2)))[0]).toMatch(/method frame of 2 bytes/);
    expect(problemsOf(frame(2, 0, Buffer.alloc(14)))[0]).toMatch(/content header/);
    expect(problemsOf(frame(8, 1, Buffer.alloc(0)))[0]).toMatch(/heartbeat/);
  });
});
