import { describe, expect, test } from 'vitest';
import { PreconditionFailedError, queueResource } from '../../../src/errors.js';
import {
  assertEquivalentLvqDeclaration,
  isLvqDeclaration,
  parseLvqDeclaration,
} from '../../../src/queues/lvq/arguments.js';

const Q = queueResource({ name: 'q' });

describe('LVQ declaration arguments', () => {
  test('qpid.last_value_queue: true declares an LVQ keyed by qpid.LVQ_key', () => {
    expect(parseLvqDeclaration({ 'qpid.last_value_queue': true }, Q)).toMatchObject({
      key: 'qpid.LVQ_key',
      classic: { overflow: 'drop-head', singleActiveConsumer: false },
    });
  });

  test('qpid.last_value_queue_key alone declares an LVQ keyed by that header', () => {
    expect(parseLvqDeclaration({ 'qpid.last_value_queue_key': 'ISIN' }, Q)?.key).toBe('ISIN');
    expect(
      parseLvqDeclaration(
        { 'qpid.last_value_queue': true, 'qpid.last_value_queue_key': 'ISIN' },
        'q',
      )?.key,
    ).toBe('ISIN');
  });

  test('without LVQ arguments, or with qpid.last_value_queue: false, there is no LVQ', () => {
    expect(parseLvqDeclaration(undefined, Q)).toBeUndefined();
    expect(parseLvqDeclaration({ 'x-max-priority': 5 }, Q)).toBeUndefined();
    expect(parseLvqDeclaration({ 'qpid.last_value_queue': false }, Q)).toBeUndefined();
    expect(isLvqDeclaration({ 'qpid.last_value_queue': false })).toBe(false);
    expect(isLvqDeclaration({ 'qpid.last_value_queue_key': 'k' })).toBe(true);
    expect(isLvqDeclaration({ 'qpid.last_value_queue': true })).toBe(true);
  });

  test('LVQ wins over x-max-priority, which is ignored (even when invalid)', () => {
    const lvq = parseLvqDeclaration({ 'qpid.last_value_queue': true, 'x-max-priority': 10 }, Q);
    expect(lvq?.classic).not.toHaveProperty('maxPriority');
    expect(
      parseLvqDeclaration({ 'qpid.last_value_queue': true, 'x-max-priority': 'a' }, Q),
    ).toBeDefined();
  });

  test('keeps the classic-queue arguments', () => {
    const lvq = parseLvqDeclaration(
      { 'qpid.last_value_queue': true, 'x-max-length': 10, 'x-message-ttl': 500 },
      'q',
    );
    expect(lvq?.classic).toMatchObject({ maxLength: 10, messageTtl: 500 });
  });

  test.each([
    [
      { 'qpid.last_value_queue': 'yes' },
      "invalid arg 'qpid.last_value_queue' for queue 'q' in vhost '/'",
    ],
    [{ 'qpid.last_value_queue_key': '' }, "invalid arg 'qpid.last_value_queue_key'"],
    [{ 'qpid.last_value_queue_key': 5 }, "invalid arg 'qpid.last_value_queue_key'"],
    [{ 'qpid.last_value_queue_key': 'é'.repeat(128) }, 'must be a header name of 1..255 bytes'],
    [
      { 'qpid.last_value_queue': false, 'qpid.last_value_queue_key': 'k' },
      'contradicts qpid.last_value_queue: false',
    ],
    [{ 'qpid.last_value_queue': true, 'x-max-length': -1 }, "invalid arg 'x-max-length'"],
  ])('refuses %j with 406', (args, message) => {
    let error: unknown;
    try {
      parseLvqDeclaration(args, Q);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect((error as PreconditionFailedError).replyCode).toBe(406);
    expect((error as Error).message).toContain(message);
  });

  test('a redeclaration must keep the LVQ, its key and its arguments (priority may differ)', () => {
    const declared = parseLvqDeclaration({ 'qpid.last_value_queue_key': 'ISIN' }, Q)!;
    const redeclare = (args: Record<string, unknown>) => () =>
      assertEquivalentLvqDeclaration(declared, args, Q);
    expect(redeclare({ 'qpid.last_value_queue_key': 'ISIN', 'x-max-priority': 3 })).not.toThrow();
    expect(redeclare({})).toThrow(
      "PRECONDITION_FAILED - inequivalent arg 'qpid.last_value_queue' for queue 'q' in vhost '/'",
    );
    expect(redeclare({ 'qpid.last_value_queue': true })).toThrow(
      "inequivalent arg 'qpid.last_value_queue_key' for queue 'q' in vhost '/'",
    );
    expect(redeclare({ 'qpid.last_value_queue_key': 'ISIN', 'x-max-length': 3 })).toThrow(
      "inequivalent arg 'x-max-length' for queue 'q' in vhost '/'",
    );
  });
});
