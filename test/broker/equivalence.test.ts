import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { QueueDeclareOptions, QueueKind } from '../../src/broker/declare-options.js';
import { KINDS } from '../../src/broker/queue-kinds.js';

async function redeclare(first: QueueDeclareOptions, second: QueueDeclareOptions) {
  await using broker = await Broker.open();
  const q = await broker.queue('jobs', first);
  try {
    const again = await broker.queue('jobs', second);
    expect(again).toBe(q);
    return undefined;
  } catch (error) {
    return error as Error & { code: string; replyCode: number };
  }
}

describe('redeclaring a queue', () => {
  it('returns the same queue object for an identical declaration of every kind', async () => {
    await using broker = await Broker.open();
    const decls: [string, QueueDeclareOptions][] = [
      ['fifo', { arguments: { 'x-message-ttl': 1000 } }],
      ['prio', { arguments: { 'x-max-priority': 5 } }],
      ['lvq', { arguments: { 'qpid.last_value_queue_key': 'k' } }],
      ['stream', { arguments: { 'x-queue-type': 'stream', 'x-max-age': '1D' } }],
    ];
    for (const [name, options] of decls) {
      const q = await broker.queue(name, options);
      expect(await broker.queue(name, options)).toBe(q);
    }
  });

  it('fails with 406 in RabbitMQ words when x-max-priority is added', async () => {
    const error = await redeclare({}, { arguments: { 'x-max-priority': 5 } });
    expect(error).toMatchObject({
      code: 'MQLITE_PRECONDITION_FAILED',
      replyCode: 406,
      message:
        "PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'jobs' in vhost '/': received the value '5' of type 'signedint' but current is none",
    });
  });

  it('fails with 406 when x-max-priority changes or is dropped', async () => {
    expect((await redeclare({ maxPriority: 5 }, { maxPriority: 9 }))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'jobs' in vhost '/': received '9' but current is '5'",
    );
    expect((await redeclare({ maxPriority: 5 }, {}))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'jobs' in vhost '/': received none but current is the value '5' of type 'signedint'",
    );
  });

  it('fails with 406 naming each classic argument that differs', async () => {
    const cases: [string, unknown, unknown][] = [
      ['x-message-ttl', 1000, 2000],
      ['x-expires', 1000, 2000],
      ['x-max-length', 10, 20],
      ['x-max-length-bytes', 10, 20],
      ['x-overflow', 'drop-head', 'reject-publish'],
      ['x-dead-letter-exchange', '', 'other'],
      ['x-delivery-limit', 1, 2],
      ['x-single-active-consumer', true, false],
    ];
    for (const [arg, a, b] of cases) {
      const error = await redeclare({ arguments: { [arg]: a } }, { arguments: { [arg]: b } });
      expect(error?.message, arg).toMatch(
        new RegExp(
          `^PRECONDITION_FAILED - inequivalent arg '${arg}' for queue 'jobs' in vhost '/': received '${b}' but current is '${a}'$`,
        ),
      );
    }
  });

  /** Two declarations that differ in one argument, for every argument a queue kind acts on. */
  const SAMPLES: Readonly<
    Record<string, readonly [Record<string, unknown>, Record<string, unknown>]>
  > = {
    'x-message-ttl': [{ 'x-message-ttl': 1000 }, { 'x-message-ttl': 2000 }],
    'x-expires': [{ 'x-expires': 1000 }, { 'x-expires': 2000 }],
    'x-max-length': [{ 'x-max-length': 10 }, { 'x-max-length': 20 }],
    'x-max-length-bytes': [{ 'x-max-length-bytes': 10 }, { 'x-max-length-bytes': 20 }],
    'x-overflow': [{ 'x-overflow': 'drop-head' }, { 'x-overflow': 'reject-publish' }],
    'x-delivery-limit': [{ 'x-delivery-limit': 1 }, { 'x-delivery-limit': 2 }],
    'x-dead-letter-exchange': [
      { 'x-dead-letter-exchange': 'a' },
      { 'x-dead-letter-exchange': 'b' },
    ],
    'x-dead-letter-routing-key': [
      { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'a' },
      { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'b' },
    ],
    'x-single-active-consumer': [
      { 'x-single-active-consumer': true },
      { 'x-single-active-consumer': false },
    ],
    'x-max-priority': [{ 'x-max-priority': 5 }, { 'x-max-priority': 6 }],
    'x-max-age': [{ 'x-max-age': '1D' }, { 'x-max-age': '2D' }],
    'x-stream-max-segment-size-bytes': [
      { 'x-stream-max-segment-size-bytes': 1000 },
      { 'x-stream-max-segment-size-bytes': 2000 },
    ],
    'qpid.last_value_queue': [
      { 'qpid.last_value_queue': true },
      { 'qpid.last_value_queue': false },
    ],
    'qpid.last_value_queue_key': [
      { 'qpid.last_value_queue_key': 'a' },
      { 'qpid.last_value_queue_key': 'b' },
    ],
    'x-message-deduplication': [
      { 'x-message-deduplication': true },
      { 'x-message-deduplication': false },
    ],
    'x-cache-size': [{ 'x-cache-size': 10 }, { 'x-cache-size': 20 }],
    'x-cache-ttl': [{ 'x-cache-ttl': 1000 }, { 'x-cache-ttl': 2000 }],
    'x-deduplication-header': [
      { 'x-deduplication-header': 'a' },
      { 'x-deduplication-header': 'b' },
    ],
    'x-dead-letter-strategy': [
      { 'x-dead-letter-strategy': 'at-most-once' },
      { 'x-dead-letter-strategy': 'at-least-once' },
    ],
    'x-quorum-initial-group-size': [
      { 'x-quorum-initial-group-size': 1 },
      { 'x-quorum-initial-group-size': 3 },
    ],
    'x-quorum-target-group-size': [
      { 'x-quorum-target-group-size': 1 },
      { 'x-quorum-target-group-size': 3 },
    ],
    'x-queue-leader-locator': [
      { 'x-queue-leader-locator': 'client-local' },
      { 'x-queue-leader-locator': 'balanced' },
    ],
    'x-max-in-memory-length': [{ 'x-max-in-memory-length': 1 }, { 'x-max-in-memory-length': 2 }],
    'x-max-in-memory-bytes': [{ 'x-max-in-memory-bytes': 1 }, { 'x-max-in-memory-bytes': 2 }],
  };

  /**
   * Each kind's declaration, a redeclaration of it as another kind (its `x-queue-type` case), and
   * the arguments it acts on that a redeclare does not compare.
   */
  const KIND_CASES: Readonly<
    Record<
      QueueKind,
      {
        base: Record<string, unknown>;
        retyped: Record<string, unknown>;
        notCompared: Record<string, string>;
      }
    >
  > = {
    classic: { base: {}, retyped: { 'x-queue-type': 'stream' }, notCompared: {} },
    priority: {
      base: { 'x-max-priority': 5 },
      retyped: { 'x-max-priority': 5, 'x-queue-type': 'stream' },
      notCompared: {},
    },
    lvq: {
      base: { 'qpid.last_value_queue': true },
      retyped: { 'x-queue-type': 'stream' },
      // The Qpid broker ignores it on an LVQ, and so does mqlite (see the LVQ case below).
      notCompared: { 'x-max-priority': 'an LVQ ignores it' },
    },
    stream: {
      base: { 'x-queue-type': 'stream' },
      retyped: { 'x-queue-type': 'classic' },
      notCompared: {},
    },
    quorum: {
      base: { 'x-queue-type': 'quorum' },
      retyped: { 'x-queue-type': 'classic' },
      notCompared: {},
    },
  };

  for (const [kind, { base, retyped, notCompared }] of Object.entries(KIND_CASES)) {
    it(`fails with 406 naming every argument a ${kind} queue acts on, when it differs`, async () => {
      for (const arg of KINDS[kind as QueueKind].arguments) {
        const sample = arg === 'x-queue-type' ? [{}, undefined] : SAMPLES[arg];
        if (sample === undefined) throw new Error(`no sample values for '${arg}'`);
        const [first, second] = sample;
        const error = await redeclare(
          { arguments: { ...base, ...first } },
          { arguments: second === undefined ? retyped : { ...base, ...second } },
        );
        if (arg in notCompared) expect(error, arg).toBeUndefined();
        else expect(error?.message, arg).toMatch(`PRECONDITION_FAILED - inequivalent arg '${arg}'`);
      }
    });
  }

  it('fails with 406 when a stream is redeclared with another x-max-length, as LavinMQ', async () => {
    const stream = { type: 'stream' as const };
    expect(
      (await redeclare({ ...stream, maxLength: 5 }, { ...stream, maxLength: 6 }))?.message,
    ).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'jobs' in vhost '/': received '6' but current is '5'",
    );
    expect((await redeclare({ ...stream, maxLength: 5 }, stream))?.message).toMatch(
      /inequivalent arg 'x-max-length'.*received none but current is the value '5'/,
    );
  });

  it('compares x-queue-version, which RabbitMQ compares and mqlite ignores', async () => {
    expect(
      (
        await redeclare(
          { arguments: { 'x-queue-version': 1 } },
          { arguments: { 'x-queue-version': 2 } },
        )
      )?.message,
    ).toMatch(/inequivalent arg 'x-queue-version'.*received '2' but current is '1'$/);
  });

  it('fails with 406 when durable or auto_delete differ', async () => {
    expect((await redeclare({ durable: true }, { durable: false }))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'jobs' in vhost '/': received 'false' but current is 'true'",
    );
    expect((await redeclare({}, { autoDelete: true }))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'auto_delete' for queue 'jobs' in vhost '/': received 'true' but current is 'false'",
    );
  });

  it('fails with 406 when a stream is redeclared as a classic queue and the other way round', async () => {
    expect((await redeclare({ type: 'stream' }, {}))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'jobs' in vhost '/': received none but current is the value 'stream' of type 'longstr'",
    );
    expect((await redeclare({ type: 'stream' }, { type: 'classic' }))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'jobs' in vhost '/': received 'classic' but current is 'stream'",
    );
    expect((await redeclare({}, { type: 'stream' }))?.message).toMatch(
      /inequivalent arg 'x-queue-type'.*received the value 'stream'/,
    );
    expect(
      (await redeclare({ type: 'stream', maxAge: '1D' }, { type: 'stream', maxAge: '2D' }))
        ?.message,
    ).toMatch(/inequivalent arg 'x-max-age'/);
  });

  it('fails with 406 when an LVQ is redeclared without LVQ arguments or with another key', async () => {
    expect((await redeclare({ lvq: true }, {}))?.message).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'qpid.last_value_queue' for queue 'jobs' in vhost '/': received none but current is the value 'true' of type 'bool'",
    );
    expect((await redeclare({}, { lvqKey: 'k' }))?.message).toMatch(
      /inequivalent arg 'qpid.last_value_queue_key'.*received the value 'k' of type 'longstr' but current is none/,
    );
    expect((await redeclare({ lvqKey: 'a' }, { lvqKey: 'b' }))?.message).toMatch(
      /inequivalent arg 'qpid.last_value_queue_key'.*received 'b' but current is 'a'$/,
    );
  });

  it('compares a redeclaration before validating it, naming what RabbitMQ names', async () => {
    // A value the queue would refuse is an inequivalent one when the queue exists.
    expect(
      (
        await redeclare(
          { arguments: { 'x-max-length': 100 } },
          { arguments: { 'x-max-length': 'x' } },
        )
      )?.message,
    ).toBe(
      "PRECONDITION_FAILED - inequivalent arg 'x-max-length' for queue 'jobs' in vhost '/': received 'x' but current is '100'",
    );
    // RabbitMQ's order: x-message-ttl before x-max-priority, x-max-length-bytes before x-max-priority.
    expect(
      (await redeclare({}, { arguments: { 'x-max-priority': 7, 'x-message-ttl': 5 } }))?.message,
    ).toMatch(/inequivalent arg 'x-message-ttl'.*received the value '5' of type 'signedint'/);
    expect(
      (
        await redeclare(
          { arguments: { 'x-max-length-bytes': 1000, 'x-max-priority': 1 } },
          { arguments: { 'x-max-length-bytes': 2000, 'x-max-priority': 2 } },
        )
      )?.message,
    ).toMatch(/inequivalent arg 'x-max-length-bytes'/);
    // An explicit classic type is the default one; a stream takes no classic argument into account.
    expect(await redeclare({ type: 'classic' }, {})).toBeUndefined();
    expect(await redeclare({}, { type: 'classic' })).toBeUndefined();
    expect(
      await redeclare({ type: 'stream' }, { type: 'stream', arguments: { 'x-message-ttl': 5 } }),
    ).toBeUndefined();
    expect((await redeclare({}, { arguments: { 'x-queue-mode': 'lazy' } }))?.message).toMatch(
      /inequivalent arg 'x-queue-mode'.*received the value 'lazy' of type 'longstr' but current is none/,
    );
  });

  it('treats an LVQ key spelled two ways as the same, and ignores x-max-priority on an LVQ', async () => {
    expect(await redeclare({ lvq: true }, { lvqKey: 'qpid.LVQ_key' })).toBeUndefined();
    expect(
      await redeclare({ lvq: true, maxPriority: 3 }, { lvq: true, maxPriority: 7 }),
    ).toBeUndefined();
  });

  it('ignores arguments mqlite does not interpret, as RabbitMQ does', async () => {
    expect(
      await redeclare({ arguments: { 'x-custom': 1 } }, { arguments: { 'x-custom': 2 } }),
    ).toBeUndefined();
  });

  it('compares numbers by value whatever their width', async () => {
    expect(
      await redeclare(
        { arguments: { 'x-max-length': 10 } },
        { arguments: { 'x-max-length': 10n } },
      ),
    ).toBeUndefined();
  });

  it('changes nothing when the redeclaration fails', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('jobs', { maxPriority: 5 });
    await q.publish('x');
    await expect(broker.queue('jobs', { maxPriority: 6 })).rejects.toThrow();
    expect(broker.queues()).toMatchObject([
      { name: 'jobs', kind: 'priority', arguments: { 'x-max-priority': 5 }, messages: 1 },
    ]);
  });
});
