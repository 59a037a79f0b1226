/**
 * A connection's output writes a frame whole or not at all: a batch that fails part-way is cut
 * off the buffer and reported, and what was appended around it still goes out.
 */
import type { Socket } from 'node:net';
import { describe, expect, test } from 'vitest';
import { Heartbeats } from '../../src/server/heartbeats.js';
import { ConnectionOutput } from '../../src/server/output.js';
import { writeHeartbeat, writeMethod } from '../../src/server/wire/methods.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { wellFormed } from './raw-client.js';

/** An output over a socket that records what is written, and the errors it reports. */
function recorded() {
  const written: Buffer[] = [];
  const errors: unknown[] = [];
  const socket = {
    on: () => socket,
    write: (bytes: Buffer) => written.push(bytes) > 0,
  } as unknown as Socket;
  const output = new ConnectionOutput(
    socket,
    new Heartbeats(new ManualClock()),
    () => {},
    (error) => errors.push(error),
  );
  return { output, errors, frames: () => wellFormed(Buffer.concat(written)) };
}

/** An output over a socket whose writes complete only when `complete()` is called. */
function pending() {
  const written: Buffer[] = [];
  const callbacks: (() => void)[] = [];
  const socket = {
    on: () => socket,
    write: (bytes: Buffer, done: () => void) => {
      written.push(bytes);
      callbacks.push(done);
      return true;
    },
  } as unknown as Socket;
  const output = new ConnectionOutput(
    socket,
    new Heartbeats(new ManualClock()),
    () => {},
    () => {},
  );
  const complete = () => {
    for (const done of callbacks.splice(0)) done();
  };
  return { output, written, complete };
}

/** A method frame carrying `tag` (up to 255 bytes) as its consumer tag. */
const tagged = (tag: string) => (w: Parameters<typeof writeHeartbeat>[0]) =>
  writeMethod(w, 1, 'basic.cancel-ok', { consumerTag: tag });

describe('a connection output', () => {
  test('bytes handed to the socket stay as they were until the socket is done with them', () => {
    const { output, written, complete } = pending();
    output.write(tagged('a'.repeat(200)));
    output.flush();
    output.write(tagged('b'.repeat(200)));
    output.flush();
    complete();
    // The first buffer is free again: the third batch may go into it, never the second's.
    output.write(tagged('c'.repeat(200)));
    output.flush();
    output.write(tagged('d'.repeat(200)));
    output.flush();
    expect(written.map((bytes) => String.fromCharCode(bytes[20]!))).toEqual(['a', 'b', 'c', 'd']);
    expect(wellFormed(Buffer.concat(written))).toEqual([
      'basic.cancel-ok',
      'basic.cancel-ok',
      'basic.cancel-ok',
      'basic.cancel-ok',
    ]);
  });

  test('a socket that does not drain holds about the bytes written, not a grown buffer a write', () => {
    const { output, written } = pending();
    // A burst grows the buffer to 512 KiB, then small batches follow while nothing completes.
    for (let i = 0; i < 2000; i++) output.write(tagged('x'.repeat(200)));
    output.flush();
    for (let i = 0; i < 50; i++) {
      output.write(tagged('y'));
      output.flush();
    }
    const held = new Set(written.map((bytes) => bytes.buffer));
    const bytes = [...held].reduce((sum, buffer) => sum + buffer.byteLength, 0);
    expect(bytes).toBeLessThan(1024 * 1024 + 50 * 8192);
  });

  test('frames that fail to encode part-way are not written; what came before and after is', () => {
    const { output, errors, frames } = recorded();
    output.write(writeHeartbeat);
    output.write((w) => {
      writeMethod(w, 1, 'basic.qos-ok', {});
      // A method frame begun, then a value no AMQP type carries.
      writeMethod(w, 1, 'queue.declare-ok', {
        queue: 'x'.repeat(300),
        messageCount: 0,
        consumerCount: 0,
      });
    });
    output.write(writeHeartbeat);
    output.flush();
    expect(frames()).toEqual(['heartbeat', 'heartbeat']);
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toMatch(/short string of 300 bytes/);
  });

  test('a batch appended directly and failed is cut off the buffer', () => {
    const { output, errors, frames } = recorded();
    const w = output.writer()!;
    writeMethod(w, 1, 'basic.qos-ok', {});
    output.appended();
    const again = output.writer()!;
    writeMethod(again, 1, 'basic.recover-ok', {});
    again.u8(1); // half of a frame
    output.failed(new RangeError('unencodable'));
    output.flush();
    expect(frames()).toEqual(['basic.qos-ok']);
    expect(errors).toHaveLength(1);
  });
});
