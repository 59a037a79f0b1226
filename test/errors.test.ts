import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { Broker } from '../src/broker/broker.js';
import * as errors from '../src/errors.js';
import * as api from '../src/index.js';

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
      config: { queues: { q: { durable: false, arguments: { 'x-queue-type': 'quorum' } } } },
    }).catch((error: unknown) => error);
    expect(quorum).toBeInstanceOf(errors.PreconditionFailedError);
    const reserved = await Broker.open({ config: { queues: { 'amq.q': {} } } }).catch(
      (error: unknown) => error,
    );
    expect(reserved).toBeInstanceOf(errors.AccessRefusedError);
  });

  it('lists every exported error class in the errors guide, with its code and reply code', () => {
    const guide = readFileSync(new URL('../guides/errors.md', import.meta.url), 'utf8');
    const documented = [...guide.matchAll(/^\| `(\w+)`[^|]*\| `(\w+)` \| (\d+) \|$/gm)].map(
      ([, name, code, replyCode]) => ({ name: String(name), code, replyCode: Number(replyCode) }),
    );
    const exported = Object.entries(api)
      .filter(
        ([, value]) => typeof value === 'function' && value.prototype instanceof errors.MqliteError,
      )
      .map(([name, Class]) => {
        // Every constructor sets the code and reply code whatever its arguments say.
        const error = new (Class as new (detail: string) => errors.MqliteError)('x');
        return { name, code: error.code, replyCode: error.replyCode };
      });
    expect(exported.length).toBeGreaterThanOrEqual(17);
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(documented.sort(byName)).toEqual(exported.sort(byName));
  });
});

describe('errors of two copies of mqlite (its ES and its CommonJS build in one process)', () => {
  it('are instances of the same-named classes of either copy, and of no other', async () => {
    // A second instance of the module, as the other build's copy is.
    vi.resetModules();
    const other = await import('../src/errors.js');
    expect(other.NotFoundError).not.toBe(errors.NotFoundError);
    const theirs = new other.NotFoundError("no queue 'q'");
    expect(theirs).toBeInstanceOf(errors.NotFoundError);
    expect(theirs).toBeInstanceOf(errors.MqliteError);
    expect(theirs).not.toBeInstanceOf(errors.PreconditionFailedError);
    const ours = new errors.DataLossError('torn-write', 'lost');
    expect(ours).toBeInstanceOf(other.CorruptionError);
    expect(ours).not.toBeInstanceOf(other.NotFoundError);
    expect(new Error('plain')).not.toBeInstanceOf(other.MqliteError);
  });
});
