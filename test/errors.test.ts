import { describe, expect, it } from 'vitest';
import { Broker } from '../src/broker/broker.js';
import * as errors from '../src/errors.js';

const classes = (Object.values(errors) as unknown[]).filter(
  (value): value is new (detail: string) => errors.MqliteError =>
    typeof value === 'function' &&
    value.prototype instanceof errors.MqliteError &&
    // Errors of stored data keep their own place and fields (see carriesItsOwnPlace).
    !(value.prototype instanceof errors.CorruptionError) &&
    value !== errors.CorruptionError &&
    value !== errors.StorageError &&
    value !== errors.FormatVersionError &&
    value !== errors.OffsetClampedError,
);

describe('errors', () => {
  it('keeps the class, code and reply code when context is added', () => {
    expect(classes.length).toBeGreaterThanOrEqual(12);
    for (const Class of classes) {
      const original = new Class('something failed');
      const wrapped = errors.withContext(original, "config: queue 'q'");
      expect(wrapped).toBeInstanceOf(Class);
      expect(wrapped.name).toBe(original.name);
      expect(wrapped.code).toBe(original.code);
      expect(wrapped.replyCode).toBe(original.replyCode);
      expect(wrapped.message).toBe(
        `${original.message.split(' - ')[0]} - config: queue 'q': something failed`,
      );
      expect(wrapped.cause).toBe(original);
    }
  });

  it('gives config errors the class their code names', async () => {
    const precondition = await Broker.open({
      config: { queues: { q: { maxPriority: 300 } } },
    }).catch((error: unknown) => error);
    expect(precondition).toBeInstanceOf(errors.PreconditionFailedError);
    expect(precondition).toMatchObject({ code: 'MQLITE_PRECONDITION_FAILED', replyCode: 406 });
    const quorum = await Broker.open({
      config: { queues: { q: { arguments: { 'x-queue-type': 'quorum' } } } },
    }).catch((error: unknown) => error);
    expect(quorum).toBeInstanceOf(errors.NotImplementedError);
    const reserved = await Broker.open({ config: { queues: { 'amq.q': {} } } }).catch(
      (error: unknown) => error,
    );
    expect(reserved).toBeInstanceOf(errors.AccessRefusedError);
  });
});
