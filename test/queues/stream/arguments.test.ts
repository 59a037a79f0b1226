import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MqliteError } from '../../../src/errors.js';
import {
  DEFAULT_STREAM_SEGMENT_BYTES,
  maxAgeCutoff,
  maxAgeExpiry,
  parseMaxAge,
  parseStreamArguments,
  streamArgumentsDiff,
} from '../../../src/queues/stream/arguments.js';
import { openStream, STORAGE_KINDS, TestStorage } from './support.js';

function refused(fn: () => unknown, message: string) {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(MqliteError);
    expect((error as MqliteError).replyCode).toBe(406);
    expect((error as Error).message).toBe(`PRECONDITION_FAILED - ${message}`);
    return;
  }
  throw new Error(`expected "${message}"`);
}

describe('stream declaration', () => {
  it('is always durable: non-durable, exclusive and auto-delete streams are refused', () => {
    refused(() => parseStreamArguments({ durable: false }), 'A stream cannot be non-durable');
    refused(() => parseStreamArguments({ exclusive: true }), 'A stream cannot be exclusive');
    refused(() => parseStreamArguments({ autoDelete: true }), 'A stream cannot be auto-delete');
    expect(parseStreamArguments({ durable: true, exclusive: false, autoDelete: false })).toEqual({
      segmentBytes: DEFAULT_STREAM_SEGMENT_BYTES,
    });
  });

  it.each([
    ['x-dead-letter-exchange', 'dlx'],
    ['x-dead-letter-routing-key', 'dead'],
    ['x-expires', 1000],
    ['x-delivery-limit', 3],
    ['x-overflow', 'reject-publish'],
    ['x-single-active-consumer', true],
    ['x-max-priority', 5],
  ])('refuses %s', (name, value) => {
    refused(
      () => parseStreamArguments({ arguments: { [name]: value } }),
      `Argument ${name} not allowed for streams`,
    );
  });

  it.each(['7D', '1Y', '3M', '12h', '30m', '45s', '0s'])('accepts x-max-age %s', (age) => {
    const parsed = parseStreamArguments({ arguments: { 'x-max-age': age } });
    expect(parsed.maxAge).toEqual({ amount: Number.parseInt(age, 10), unit: age.at(-1) });
  });

  it.each(['7d', '1.5h', '-1h', 'h', '', '7 D', '7DD', 'D7'])('refuses x-max-age %j', (age) => {
    refused(
      () => parseStreamArguments({ name: 'events', arguments: { 'x-max-age': age } }),
      `invalid arg 'x-max-age' for queue 'events' in vhost '/': must be a string of a whole number and a unit, Y, M, D, h, m or s (as '7D' or '12h'), got '${age}'`,
    );
  });

  it('refuses a numeric x-max-age', () => {
    refused(
      () => parseMaxAge(3600),
      "invalid arg 'x-max-age': must be a string of a whole number and a unit, Y, M, D, h, m or s (as '7D' or '12h'), got a number",
    );
  });

  it('takes x-max-length and x-max-length-bytes as integers >= 0', () => {
    expect(
      parseStreamArguments({ arguments: { 'x-max-length': 0, 'x-max-length-bytes': 1024 } }),
    ).toMatchObject({ maxLength: 0, maxLengthBytes: 1024 });
    // Up to what an AMQP long holds, as LavinMQ takes them.
    expect(
      parseStreamArguments({
        arguments: { 'x-max-length': 2n ** 60n, 'x-max-length-bytes': 2 ** 62 },
      }),
    ).toMatchObject({ maxLength: 2 ** 60, maxLengthBytes: 2 ** 62 });
    for (const bad of [-1, 1.5, '10', Number.NaN, 2n ** 64n]) {
      refused(
        () => parseStreamArguments({ arguments: { 'x-max-length': bad } }),
        'x-max-length must be a non-negative integer',
      );
      refused(
        () => parseStreamArguments({ arguments: { 'x-max-length-bytes': bad } }),
        'x-max-length-bytes must be a non-negative integer',
      );
    }
  });

  it('takes a positive segment size and defaults it to 8 MiB', () => {
    expect(
      parseStreamArguments({ arguments: { 'x-stream-max-segment-size-bytes': 100 } }).segmentBytes,
    ).toBe(100);
    refused(
      () => parseStreamArguments({ arguments: { 'x-stream-max-segment-size-bytes': 0 } }),
      'x-stream-max-segment-size-bytes must be a positive integer',
    );
  });

  it('names the first differing argument for equivalence checks', () => {
    const a = parseStreamArguments({ arguments: { 'x-max-age': '1D', 'x-max-length': 5 } });
    const b = parseStreamArguments({ arguments: { 'x-max-length': 5, 'x-max-age': '1D' } });
    expect(streamArgumentsDiff(a, b)).toBeUndefined();
    const c = parseStreamArguments({ arguments: { 'x-max-age': '24h', 'x-max-length': 5 } });
    expect(streamArgumentsDiff(a, c)).toBe('x-max-age');
  });
});

describe('x-max-age arithmetic', () => {
  it('counts M as calendar months', () => {
    const march31 = Date.UTC(2024, 2, 31, 12);
    expect(new Date(maxAgeCutoff({ amount: 1, unit: 'M' }, march31)).toISOString()).toBe(
      '2024-02-29T12:00:00.000Z',
    );
    expect(new Date(maxAgeCutoff({ amount: 1, unit: 'Y' }, march31)).toISOString()).toBe(
      '2023-03-31T12:00:00.000Z',
    );
  });

  it('finds the first instant a message is too old', () => {
    const t = Date.UTC(2024, 0, 31);
    for (const age of [
      { amount: 1, unit: 'M' as const },
      { amount: 2, unit: 'h' as const },
    ]) {
      const at = maxAgeExpiry(age, t);
      expect(maxAgeCutoff(age, at)).toBeGreaterThan(t);
      expect(maxAgeCutoff(age, at - 1)).toBeLessThanOrEqual(t);
    }
  });
});

describe.each(STORAGE_KINDS)('StreamQueue.open on %s storage', (kind) => {
  let storage: TestStorage;
  beforeEach(() => {
    storage = new TestStorage(kind);
  });
  afterEach(() => storage.dispose());

  it('refuses invalid declarations without creating anything', async () => {
    await expect(openStream(storage, { exclusive: true })).rejects.toThrow(
      'A stream cannot be exclusive',
    );
    await expect(openStream(storage, { arguments: { 'x-max-age': '7d' } })).rejects.toThrow(
      /invalid arg 'x-max-age' for queue '.*' in vhost '\/': must be a string of a whole number and a unit/,
    );
    expect(await storage.storage.listNamespaces()).toEqual([]);
  });

  it('rolls segments at 8 MiB by default and at x-stream-max-segment-size-bytes when given', async () => {
    // Nine records of a million bytes: eight fit in 8 MiB (they would not in 8 million bytes).
    const body = new Uint8Array(1_000_000);
    const segmentsAfterNine = async (args: Record<string, unknown>, name: string) => {
      const stream = await openStream(storage, { name, arguments: args });
      for (let i = 0; i < 9; i++) await stream.publish(body);
      const dropped = await stream.purge(); // all but the segment being written
      await stream.close();
      return dropped;
    };
    expect(await segmentsAfterNine({}, 'default')).toBe(8);
    expect(await segmentsAfterNine({ 'x-stream-max-segment-size-bytes': 3_500_000 }, 'small')).toBe(
      6,
    );
  });

  it('remembers its arguments and refuses an inequivalent redeclaration', async () => {
    const stream = await openStream(storage, { arguments: { 'x-max-length': 10 } });
    await stream.close();
    await storage.reopen();
    const again = await openStream(storage);
    expect(again.arguments.maxLength).toBe(10);
    await again.close();
    await expect(openStream(storage, { arguments: { 'x-max-length': 20 } })).rejects.toThrow(
      "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'events' in vhost '/'",
    );
  });
});
