/**
 * The stored message format, pinned by records of format version 1 committed in
 * test/storage/fixtures/codec-v1.bin (written by make-fixtures.ts beside it), and formats 2 and 3
 * by their bytes: messages stored by earlier versions must read back exactly.
 */
import fs from 'node:fs';
import { describe, expect, test } from 'vitest';
import { messageCodec } from '../../src/message/codec.js';
import { AmqpTimestamp } from '../../src/message/timestamp.js';
import type { FieldTable } from '../../src/message/types.js';
import { setWireType, wireTypesOf } from '../../src/message/wire-types.js';
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

describe('stored message format 2: header numbers with their AMQP wire type', () => {
  /** A table as the AMQP server reads one: `small` arrived as a byte, `ratio` as a float. */
  function typedHeaders(): FieldTable {
    const headers: FieldTable = { small: 5, ratio: 1.5, name: 'n', list: [1, 2] };
    setWireType(headers, 'small', 'b');
    setWireType(headers, 'ratio', 'f');
    setWireType(headers.list as object, '1', 's');
    return headers;
  }
  const message = {
    exchange: 'x',
    routingKey: 'k',
    properties: { headers: typedHeaders() },
    body: new Uint8Array([7]),
  };

  test('a record with wire types reads back with them, its values plain', () => {
    const bytes = messageCodec.encode(message).slice();
    const read = messageCodec.decode(bytes);
    const headers = read.properties.headers!;
    expect(headers).toEqual({ small: 5, ratio: 1.5, name: 'n', list: [1, 2] });
    expect({ ...wireTypesOf(headers) }).toEqual({ small: 'b', ratio: 'f' });
    expect({ ...wireTypesOf(headers.list as object) }).toEqual({ 1: 's' });
  });

  test('the record is pinned: bit 15 of the properties word, `w` before each typed value', () => {
    expect(Buffer.from(messageCodec.encode(message)).toString('hex')).toBe(
      // properties 0x8004 | 'x' | 'k' | 4 entries: small w"b" i 5, ratio w"f" d 1.5, name s "n",
      // list A 2 (i 1, w"s" i 2) | body 07
      '04800178016b0405736d616c6c770162690500000005726174696f77016664000000000000f83f' +
        '046e616d6573016e046c69737441026901000000770173690200000007',
    );
  });

  test('a `w` value in a format 1 record is refused as damage', () => {
    const bytes = Buffer.from(messageCodec.encode(message));
    bytes[1] = bytes[1]! & 0x7f; // clear bit 15: the record claims format 1
    expect(() => messageCodec.decode(bytes)).toThrow(RangeError);
  });

  test('a table whose types no longer fit its values is written from the values', () => {
    const headers = typedHeaders();
    headers.small = 1000; // no longer a byte
    headers.ratio = 0.1; // not a float32
    const bytes = messageCodec.encode({ ...message, properties: { headers } }).slice();
    const read = messageCodec.decode(bytes).properties.headers!;
    expect(read).toEqual({ small: 1000, ratio: 0.1, name: 'n', list: [1, 2] });
    expect({ ...wireTypesOf(read) }).toEqual({});
  });
});

describe('stored message format 3: timestamps beyond a Date', () => {
  const wide = new AmqpTimestamp(1n << 62n);
  const message = {
    exchange: 'x',
    routingKey: 'k',
    properties: { timestamp: wide, headers: { at: new AmqpTimestamp(-(2n ** 63n)) } },
    body: new Uint8Array([7]),
  };

  test('a timestamp property and a header value beyond a Date read back with their seconds', () => {
    const read = messageCodec.decode(messageCodec.encode(message).slice());
    const { timestamp, headers } = read.properties;
    expect(timestamp).toBeInstanceOf(AmqpTimestamp);
    expect((timestamp as AmqpTimestamp).seconds).toBe(1n << 62n);
    expect((headers!.at as AmqpTimestamp).seconds).toBe(-(2n ** 63n));
  });

  test('the record is pinned: bit 13 of the properties word, the timestamp as i64 seconds', () => {
    expect(Buffer.from(messageCodec.encode(message)).toString('hex')).toBe(
      // properties 0x2204 | 'x' | 'k' | 1 entry: at T i64 -2^63 | timestamp i64 2^62 | body 07
      '04220178016b01026174540000000000000080000000000000004007',
    );
  });

  test('a timestamp within a Date is written as format 1 wrote it', () => {
    const dated = { ...message, properties: { timestamp: new AmqpTimestamp(1_700_000_000n) } };
    const bytes = Buffer.from(messageCodec.encode(dated));
    expect(bytes.readUInt16LE(0)).toBe(1 << 9);
    expect(messageCodec.decode(bytes).properties.timestamp).toEqual(new Date(1_700_000_000_000));
  });
});
