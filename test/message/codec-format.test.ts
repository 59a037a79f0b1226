/**
 * The stored message format, pinned by records of format version 1 committed in
 * test/storage/fixtures/codec-v1.bin (written by make-fixtures.ts beside it): messages stored by
 * earlier versions must read back exactly.
 */
import fs from 'node:fs';
import { describe, expect, test } from 'vitest';
import { messageCodec } from '../../src/message/codec.js';
import { codecV1Messages } from '../storage/fixtures/codec-v1-messages.js';
import { storedForm } from '../support/stored-form.js';

/** The records of the fixture file (`u32 length | record` each) as [position, length]. */
function records(bytes: Buffer): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32LE(at);
    out.push([at + 4, length]);
    at += 4 + length;
  }
  return out;
}

describe('stored message format 1', () => {
  const file = fs.readFileSync(new URL('../storage/fixtures/codec-v1.bin', import.meta.url));

  test('messages stored in format 1 read back exactly, every property and header type', () => {
    const found = records(file);
    expect(found).toHaveLength(codecV1Messages.length);
    for (const [i, [at, length]] of found.entries()) {
      const expected = storedForm(codecV1Messages[i]!);
      // As a log reads them: out of a larger buffer, and from a record of their own.
      expect(messageCodec.decodeFrom!(file, at, length)).toStrictEqual(expected);
      expect(messageCodec.decode(file.subarray(at, at + length))).toStrictEqual(expected);
    }
  });

  test('new messages are still written in format 1', () => {
    // A change here needs a new fixture (format 2) beside this one, which must keep reading.
    for (const [i, [at, length]] of records(file).entries()) {
      expect(Buffer.from(messageCodec.encode(codecV1Messages[i]!))).toEqual(
        file.subarray(at, at + length),
      );
    }
  });
});
