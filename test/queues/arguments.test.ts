import { describe, expect, it } from 'vitest';
import { MqliteError, queueResource } from '../../src/errors.js';
import {
  assertEquivalentClassicArguments,
  classicArgumentsDiff,
  parseClassicArguments,
} from '../../src/queues/arguments.js';

function refusal(args: Record<string, unknown>): string {
  try {
    parseClassicArguments(args, JOBS);
  } catch (error) {
    expect(error).toBeInstanceOf(MqliteError);
    expect((error as MqliteError).replyCode).toBe(406);
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

const JOBS = queueResource({ name: 'jobs' });
const Q = queueResource({ name: 'q' });

describe('classic queue arguments', () => {
  it('normalizes every argument, accepting AMQP longs as bigints', () => {
    expect(
      parseClassicArguments(
        {
          'x-max-priority': 10n,
          'x-message-ttl': 0,
          'x-expires': 1000,
          'x-max-length': 5,
          'x-max-length-bytes': 1024n,
          'x-overflow': 'reject-publish-dlx',
          'x-delivery-limit': 3,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': 'dlq',
          'x-single-active-consumer': true,
          'x-queue-type': 'classic',
        },
        'jobs',
      ),
    ).toEqual({
      maxPriority: 10,
      messageTtl: 0,
      expires: 1000,
      maxLength: 5,
      maxLengthBytes: 1024,
      overflow: 'reject-publish-dlx',
      deliveryLimit: 3,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'dlq',
      singleActiveConsumer: true,
    });
    expect(parseClassicArguments(undefined, JOBS)).toEqual({
      overflow: 'drop-head',
      singleActiveConsumer: false,
    });
  });

  it('takes count limits up to what an AMQP long holds, as RabbitMQ does', () => {
    const args = parseClassicArguments(
      {
        'x-max-length': 2n ** 60n,
        'x-max-length-bytes': 2 ** 62,
        'x-delivery-limit': 2n ** 63n - 1n,
      },
      JOBS,
    );
    expect(args).toMatchObject({
      maxLength: 2 ** 60,
      maxLengthBytes: 2 ** 62,
      deliveryLimit: 2 ** 63,
    });
    expect(refusal({ 'x-max-length': 2n ** 63n + 2048n })).toMatch(/must be an integer ≥ 0/);
  });

  it.each([
    [
      { 'x-max-priority': 'a' },
      "invalid arg 'x-max-priority' for queue 'jobs' in vhost '/': must be an integer 0..255, got 'a'",
    ],
    [{ 'x-max-priority': 256 }, 'must be an integer 0..255, got 256'],
    [{ 'x-message-ttl': -5 }, "'x-message-ttl'"],
    [{ 'x-expires': 0 }, "'x-expires' for queue 'jobs' in vhost '/': must be an integer 1.."],
    [
      { 'x-max-length': 2.5 },
      "'x-max-length' for queue 'jobs' in vhost '/': must be an integer ≥ 0",
    ],
    [{ 'x-max-length-bytes': -1 }, "'x-max-length-bytes'"],
    [{ 'x-delivery-limit': 'many' }, "'x-delivery-limit'"],
    [{ 'x-overflow': 'drop-tail' }, 'must be one of drop-head, reject-publish, reject-publish-dlx'],
    [
      { 'x-single-active-consumer': 'yes' },
      "'x-single-active-consumer' for queue 'jobs' in vhost '/': must be a boolean",
    ],
    [{ 'x-dead-letter-exchange': 1 }, "'x-dead-letter-exchange'"],
    [{ 'x-dead-letter-routing-key': 'dlq' }, 'needs x-dead-letter-exchange'],
  ])('refuses %o with 406 naming the argument and its limit', (args, text) => {
    expect(refusal(args)).toContain(text);
  });

  it('names the first argument in which two declarations differ', () => {
    const a = parseClassicArguments({ 'x-max-priority': 5, 'x-message-ttl': 10 }, Q);
    const b = parseClassicArguments({ 'x-max-priority': 5n, 'x-message-ttl': 10 }, Q);
    const c = parseClassicArguments({ 'x-max-priority': 5, 'x-overflow': 'reject-publish' }, Q);
    expect(classicArgumentsDiff(a, b)).toBeUndefined();
    expect(classicArgumentsDiff(a, c)).toBe('x-message-ttl');
    expect(() => assertEquivalentClassicArguments(a, c, Q)).toThrow(
      "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/'",
    );
  });
});
