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

describe('a connection output', () => {
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
