import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { fsStorage } from '../../src/storage/fs/index.js';

describe('bad arguments', () => {
  it('fails with 406 naming the argument and its limit, storing nothing', async () => {
    await using broker = await Broker.open();
    const cases: [Record<string, unknown>, string][] = [
      [
        { 'x-max-priority': 256 },
        "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/': must be an integer 0..255, got 256",
      ],
      [
        { 'x-max-priority': 'a' },
        "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/': must be an integer 0..255, got 'a'",
      ],
      [
        { 'x-max-priority': -1 },
        "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/': must be an integer 0..255, got -1",
      ],
      [
        { 'x-max-priority': 1.5 },
        "PRECONDITION_FAILED - invalid arg 'x-max-priority' for queue 'q' in vhost '/': must be an integer 0..255, got 1.5",
      ],
      [
        { 'x-overflow': 'explode' },
        "PRECONDITION_FAILED - invalid arg 'x-overflow' for queue 'q' in vhost '/': must be one of drop-head, reject-publish, reject-publish-dlx",
      ],
      [
        { 'qpid.last_value_queue': 'yes' },
        "PRECONDITION_FAILED - invalid arg 'qpid.last_value_queue' for queue 'q' in vhost '/': must be a boolean, got 'yes'",
      ],
      [
        { 'qpid.last_value_queue_key': '' },
        "PRECONDITION_FAILED - invalid arg 'qpid.last_value_queue_key' for queue 'q' in vhost '/': must be a header name of 1..255 bytes, got ''",
      ],
      [
        { 'x-queue-type': 'stream', 'x-max-age': '7d' },
        "PRECONDITION_FAILED - invalid arg 'x-max-age' for queue 'q' in vhost '/': must be a string of a whole number and a unit, Y, M, D, h, m or s (as '7D' or '12h'), got '7d'",
      ],
      [
        { 'x-queue-type': 'stream', 'x-max-age': 3600 },
        "PRECONDITION_FAILED - invalid arg 'x-max-age' for queue 'q' in vhost '/': must be a string of a whole number and a unit, Y, M, D, h, m or s (as '7D' or '12h'), got a number",
      ],
      ...(
        [
          ['x-dead-letter-exchange', 'dlx'],
          ['x-dead-letter-routing-key', 'dead'],
          ['x-expires', 60_000],
          ['x-delivery-limit', 3],
          ['x-overflow', 'reject-publish'],
          ['x-single-active-consumer', true],
          ['x-max-priority', 5],
        ] as const
      ).map(([name, value]): [Record<string, unknown>, string] => [
        { 'x-queue-type': 'stream', [name]: value },
        `PRECONDITION_FAILED - Argument ${name} not allowed for streams`,
      ]),
      [
        { 'x-queue-type': 7 },
        "PRECONDITION_FAILED - invalid arg 'x-queue-type' for queue 'q' in vhost '/': must be 'classic', 'quorum' or 'stream', got 7",
      ],
    ];
    for (const [args, message] of cases) {
      await expect(
        broker.queue('q', { arguments: args }),
        JSON.stringify(args),
      ).rejects.toMatchObject({ code: 'MQLITE_PRECONDITION_FAILED', replyCode: 406, message });
    }
    expect(broker.queues()).toEqual([]);
  });

  it('refuses a stream that is non-durable, exclusive or auto-delete', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('s', { type: 'stream', durable: false })).rejects.toThrow(
      'A stream cannot be non-durable',
    );
    await expect(broker.queue('s', { type: 'stream', exclusive: true })).rejects.toThrow(
      'A stream cannot be exclusive',
    );
    await expect(broker.queue('s', { type: 'stream', autoDelete: true })).rejects.toThrow(
      'A stream cannot be auto-delete',
    );
  });

  it('refuses options of the wrong type with a TypeError', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('q', 5 as never)).rejects.toThrow(TypeError);
    await expect(broker.queue('q', { durable: 'yes' as never })).rejects.toThrow(
      new TypeError("option 'durable' must be a boolean"),
    );
    await expect(broker.queue('q', { arguments: [] as never })).rejects.toThrow(TypeError);
    await expect(broker.queue('q', { arguments: { 'x-max-length': () => 1 } })).rejects.toThrow(
      new TypeError("arguments['x-max-length'] is not a value an AMQP table can carry"),
    );
    await expect(broker.queue('q', { toString: 1 } as never)).rejects.toThrow(
      new TypeError("unknown queue option 'toString'"),
    );
    await expect(Broker.open({ storag: 1 } as never)).rejects.toThrow(
      new TypeError("unknown Broker option 'storag' (did you mean 'storage'?)"),
    );
  });
});

describe('queue names', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mqlite-broker-names-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps names like ../x, a/b and 255-byte UTF-8 inside the data directory, across a reopen', async () => {
    const names = ['../x', 'a/b', '..', 'nul\u0000byte', `${'é'.repeat(127)}a`, 'CON'];
    expect(Buffer.byteLength(names[4]!)).toBe(255);
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir }) });
      for (const name of names) {
        const q = await broker.queue(name);
        await q.publish(`body of ${name}`);
      }
    }
    await using broker = await Broker.open({ storage: fsStorage({ dir }) });
    expect(
      broker
        .queues()
        .map((q) => q.name)
        .sort(),
    ).toEqual([...names].sort());
    for (const name of names) {
      const q = await broker.queue(name);
      expect(
        (await (q as { get(): Promise<{ bodyString(): string } | null> }).get())?.bodyString(),
      ).toBe(`body of ${name}`);
    }
    // Nothing was written outside the data directory.
    await expect(access(path.join(dir, '..', 'x'))).rejects.toThrow();
  });

  it('creates no storage for a declaration that fails', async () => {
    const storage = fsStorage({ dir });
    await using broker = await Broker.open({ storage });
    await expect(broker.queue('q', { maxPriority: 300 })).rejects.toThrow();
    await expect(broker.queue('s', { type: 'stream', maxAge: 'soon' })).rejects.toThrow();
    await expect(broker.queue('amq.q')).rejects.toThrow();
    expect(await storage.listNamespaces()).toEqual(['']);
  });

  it('refuses names longer than 255 bytes of UTF-8 with a RangeError', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('é'.repeat(128))).rejects.toThrow(
      new RangeError('queue name must be at most 255 bytes of UTF-8, got 256'),
    );
    await expect(broker.queue('a\uD800')).rejects.toThrow(TypeError);
    await expect(broker.queue(5 as never)).rejects.toThrow(TypeError);
  });

  it('refuses to create amq. names with 403, as RabbitMQ does', async () => {
    await using broker = await Broker.open();
    await expect(broker.queue('amq.custom')).rejects.toMatchObject({
      code: 'MQLITE_ACCESS_REFUSED',
      replyCode: 403,
      message: "ACCESS_REFUSED - queue name 'amq.custom' contains reserved prefix 'amq.*'",
    });
    // A server-named queue can be looked up passively, but not redeclared.
    const q = await broker.queue('');
    expect(await broker.queue(q.name, { passive: true })).toBe(q);
    await expect(broker.queue(q.name)).rejects.toMatchObject({ replyCode: 403 });
  });
});
