import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { PreconditionFailedError } from '../../src/errors.js';
import type { FieldTable } from '../../src/message/types.js';
import { LastValueQueue } from '../../src/queues/lvq/last-value-queue.js';
import { PriorityQueue, Queue } from '../../src/queues/priority-queue.js';
import { StreamQueue } from '../../src/queues/stream/stream-queue.js';

const unknownArg = (arg: string, queue: string, nearest: string) =>
  `PRECONDITION_FAILED - unknown argument '${arg}' for queue '${queue}' in vhost '/' (did you mean '${nearest}'?)`;

describe('strict mode', () => {
  it('is off by default: unknown x- arguments are accepted, as brokers accept them', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('jobs', {
      arguments: { 'x-max-lenght': 5, 'x-queue-mode': 'lazy' },
    });
    await q.subscribe({ args: { 'x-priorty': 1 } }, () => {});
  });

  it('is off by default: a publish with geo headers no filter could match is stored, and matches no geo filter, as on LavinMQ', async () => {
    await using broker = await Broker.open();
    const events = await broker.queue('events', { type: 'stream' });
    const jobs = await broker.queue('jobs');
    const bad: FieldTable[] = [
      { 'x-geo-lat': 'north', 'x-geo-lon': 10 },
      { 'x-geo-lat': 95, 'x-geo-lon': 10 },
      { 'x-geo-lat': 10, 'x-geo-lon': -180.5 },
    ];
    for (const headers of [...bad, { 'x-geo-lat': 10, 'x-geo-lon': 10 }]) {
      await broker.publish('', JSON.stringify(headers), { routingKey: 'events', headers });
      await jobs.publish(JSON.stringify(headers), { headers });
    }
    expect([events.messageCount, jobs.messageCount]).toEqual([4, 4]);
    const read = async (args: Record<string, unknown>) => {
      const got: unknown[] = [];
      const sub = await events.subscribe({ args: { 'x-stream-offset': 'first', ...args } }, (m) => {
        got.push(m.bodyString());
        return m.ack();
      });
      await sub.cancel();
      return got;
    };
    const box = { min_lat: -90, max_lat: 90, min_lon: -180, max_lon: 180 };
    expect(await read({ 'x-stream-filter': { 'geo-bbox': box } })).toEqual([
      JSON.stringify({ 'x-geo-lat': 10, 'x-geo-lon': 10 }),
    ]);
    expect(await read({})).toHaveLength(4);
  });

  it('is off by default: a stream consumer whose x-stream-filter filters nothing gets every message, as on LavinMQ', async () => {
    await using broker = await Broker.open();
    const events = await broker.queue('events', { type: 'stream' });
    await events.publish('plain');
    await events.publish('red', { headers: { 'x-stream-filter-value': 'red' } });
    for (const empty of [[], {}, null, '']) {
      const got: string[] = [];
      const sub = await events.subscribe(
        { args: { 'x-stream-offset': 'first', 'x-stream-filter': empty } },
        (m) => {
          got.push(m.bodyString());
          return m.ack();
        },
      );
      await sub.cancel();
      expect(got, JSON.stringify(empty)).toEqual(['plain', 'red']);
    }
  });

  it('is off by default: a stream declared with LVQ arguments ignores them, as LavinMQ', async () => {
    await using broker = await Broker.open();
    const events = await broker.queue('events', {
      arguments: { 'x-queue-type': 'stream', 'qpid.last_value_queue_key': 'k' },
    });
    await events.publish('a', { headers: { k: 1 } });
    await events.publish('b', { headers: { k: 1 } });
    expect(events.messageCount).toBe(2);
    await using strict = await Broker.open({ strict: true });
    await expect(
      strict.queue('events', {
        arguments: { 'x-queue-type': 'stream', 'qpid.last_value_queue': true },
      }),
    ).rejects.toThrow("unknown argument 'qpid.last_value_queue' for queue 'events'");
  });

  it('refuses an unknown queue argument of each kind with 406 and the nearest name', async () => {
    await using broker = await Broker.open({ strict: true });
    const cases: [string, Record<string, unknown>, string, string][] = [
      ['jobs', { 'x-max-lenght': 5 }, 'x-max-lenght', 'x-max-length'],
      ['prio', { 'x-max-priority': 5, 'x-message-tll': 5 }, 'x-message-tll', 'x-message-ttl'],
      [
        'lvq',
        { 'qpid.last_value_queue': true, 'qpid.last_value_queue_kye': 'k' },
        'qpid.last_value_queue_kye',
        'qpid.last_value_queue_key',
      ],
      ['events', { 'x-queue-type': 'stream', 'x-max-agee': '1D' }, 'x-max-agee', 'x-max-age'],
    ];
    for (const [name, args, arg, nearest] of cases) {
      const declare = broker.queue(name, { arguments: args });
      await expect(declare).rejects.toThrow(PreconditionFailedError);
      await expect(broker.queue(name, { arguments: args })).rejects.toThrow(
        unknownArg(arg, name, nearest),
      );
    }
    // Nothing was declared, and an argument of another kind is unknown too.
    expect(broker.queues()).toEqual([]);
    await expect(broker.queue('q', { arguments: { 'x-max-age': '1D' } })).rejects.toThrow(
      "unknown argument 'x-max-age' for queue 'q'",
    );
    await expect(broker.queue('q', { arguments: { 'x-queue-mode': 'lazy' } })).rejects.toThrow(
      "PRECONDITION_FAILED - unknown argument 'x-queue-mode' for queue 'q' in vhost '/'",
    );
    // Every argument mqlite acts on passes.
    await broker.queue('full', {
      arguments: {
        'x-queue-type': 'classic',
        'x-max-priority': 3,
        'x-message-ttl': 1000,
        'x-expires': 60_000,
        'x-max-length': 10,
        'x-max-length-bytes': 1000,
        'x-overflow': 'reject-publish',
        'x-delivery-limit': 3,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'dlq',
        'x-single-active-consumer': true,
      },
    });
  });

  it('refuses unknown consumer arguments, classic and stream', async () => {
    await using broker = await Broker.open({ strict: true });
    const q = await broker.queue('jobs');
    await expect(q.subscribe({ args: { 'x-priorty': 1 } }, () => {})).rejects.toThrow(
      "PRECONDITION_FAILED - unknown consumer argument 'x-priorty' for queue 'jobs' in vhost '/' (did you mean 'x-priority'?)",
    );
    expect(q.consumerCount).toBe(0);
    await q.subscribe({ args: { 'x-priority': 1 } }, () => {});
    const events = await broker.queue('events', { type: 'stream' });
    await expect(
      events.subscribe({ args: { 'x-stream-ofset': 'first' } }, () => {}),
    ).rejects.toThrow(
      "unknown consumer argument 'x-stream-ofset' for queue 'events' in vhost '/' (did you mean 'x-stream-offset'?)",
    );
    await events.subscribe(
      {
        args: {
          'x-stream-offset': 'first',
          'x-stream-filter': 'a',
          'x-filter-match-type': 'any',
          'x-stream-match-unfiltered': true,
          'x-stream-automatic-offset-tracking': true,
        },
      },
      () => {},
    );
  });

  it('refuses at publish geo headers no filter could match, storing nothing', async () => {
    await using broker = await Broker.open({ strict: true });
    const classic = await broker.queue('classic');
    const own = await Queue.open({ name: 'own', strict: true });
    const stream = await broker.queue('stream', { type: 'stream' });
    const alone = await StreamQueue.open({ name: 'alone', strict: true });
    const publishes: Array<[string, (headers: FieldTable) => Promise<void>]> = [
      ['a classic queue', (headers) => classic.publish('x', { headers })],
      ['a stream', (headers) => stream.publish('x', { headers })],
      [
        'the default exchange',
        (headers) => broker.publish('', 'x', { routingKey: 'stream', headers }),
      ],
      ['a StreamQueue of its own', (headers) => alone.publish('x', { headers })],
      ['a Queue of its own', (headers) => own.publish('x', { headers })],
    ];
    for (const [where, publish] of publishes) {
      await expect(publish({ 'x-geo-lat': 200, 'x-geo-lon': 2 }), where).rejects.toMatchObject({
        replyCode: 406,
        message:
          "PRECONDITION_FAILED - invalid header 'x-geo-lat': must be a number of degrees in -90..90, got 200",
      });
      await expect(publish({ 'x-geo-lat': 'north' }), where).rejects.toMatchObject({
        replyCode: 406,
      });
    }
    expect([classic, stream, alone, own].map((q) => q.messageCount)).toEqual([0, 0, 0, 0]);
    await alone.close();
    await own.close();
  });

  it('refuses a stream consumer whose x-stream-filter filters nothing', async () => {
    await using broker = await Broker.open({ strict: true });
    const events = await broker.queue('events', { type: 'stream' });
    for (const empty of ['', [], {}, null]) {
      await expect(
        events.subscribe({ args: { 'x-stream-filter': empty } }, () => {}),
        JSON.stringify(empty),
      ).rejects.toThrow('PRECONDITION_FAILED - x-stream-filter must hold at least one filter');
    }
    expect(events.consumerCount).toBe(0);
  });

  it('applies to the config and to queues opened without a broker', async () => {
    await expect(
      Broker.open({
        strict: true,
        config: { queues: { jobs: { arguments: { 'x-max-lenght': 1 } } } },
      }),
    ).rejects.toThrow("unknown argument 'x-max-lenght' for queue 'jobs'");
    await expect(
      PriorityQueue.open({ name: 'p', maxPriority: 2, strict: true, arguments: { 'x-expire': 5 } }),
    ).rejects.toThrow(unknownArg('x-expire', 'p', 'x-expires'));
    await expect(
      StreamQueue.open({ name: 's', strict: true, arguments: { 'x-max-lenght': 5 } }),
    ).rejects.toThrow(unknownArg('x-max-lenght', 's', 'x-max-length'));
    const q = await Queue.open({ name: 'q', strict: true });
    await expect(q.subscribe({ args: { 'x-stream-offset': 1 } })).rejects.toThrow(
      "unknown consumer argument 'x-stream-offset' for queue 'q'",
    );
    await q.close();
    await expect(Broker.open({ strict: 1 as unknown as boolean })).rejects.toThrow(
      new TypeError('Broker option strict must be a boolean'),
    );
  });
});

describe('option keys, strict or not', () => {
  it('an unknown subscribe parameter is a TypeError naming the nearest one', async () => {
    await using broker = await Broker.open();
    const q = await broker.queue('jobs');
    await expect(q.subscribe({ prefech: 10 } as never, () => {})).rejects.toThrow(
      new TypeError("unknown subscribe parameter 'prefech' (did you mean 'prefetch'?)"),
    );
    const events = await broker.queue('events', { type: 'stream' });
    await expect(events.subscribe({ noack: false } as never, () => {})).rejects.toThrow(
      new TypeError("unknown subscribe parameter 'noack' (did you mean 'noAck'?)"),
    );
    expect(q.consumerCount + events.consumerCount).toBe(0);
  });

  it("an unknown option of a queue's open() is a TypeError", async () => {
    await expect(StreamQueue.open({ name: 's', maxAge: '1D' } as never)).rejects.toThrow(
      new TypeError("unknown StreamQueue.open() option 'maxAge'"),
    );
    await expect(LastValueQueue.open({ name: 'l', kye: 'k' } as never)).rejects.toThrow(
      new TypeError("unknown LastValueQueue.open() option 'kye' (did you mean 'key'?)"),
    );
    await expect(PriorityQueue.open({ name: 'p', maxPriorty: 3 } as never)).rejects.toThrow(
      new TypeError(
        "unknown PriorityQueue.open() option 'maxPriorty' (did you mean 'maxPriority'?)",
      ),
    );
    await expect(Queue.open({ name: 'q', argument: {} } as never)).rejects.toThrow(
      new TypeError("unknown Queue.open() option 'argument' (did you mean 'arguments'?)"),
    );
  });
});
