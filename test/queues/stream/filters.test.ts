import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MqliteError } from '../../../src/errors.js';
import { haversineKm } from '../../../src/filters/index.js';
import type { Message } from '../../../src/message/message.js';
import type { FieldTable } from '../../../src/message/types.js';
import type { SubscribeParams, Subscription } from '../../../src/queues/consumer.js';
import type { StreamQueue } from '../../../src/queues/stream/stream-queue.js';
import {
  countReads,
  offsetsOf,
  openStream,
  type ReadCounter,
  STORAGE_KINDS,
  settle,
  streamPerTest,
  TestStorage,
} from './support.js';

const tagged = (value: string | number) => ({ headers: { 'x-stream-filter-value': value } });
const at = (lat: unknown, lon: unknown, extra: FieldTable = {}) => ({
  headers: { 'x-geo-lat': lat, 'x-geo-lon': lon, ...extra } as FieldTable,
});

const STOCKHOLM = { lat: 59.33, lon: 18.07 };
const NEAR_STOCKHOLM = { 'geo-within-radius': { ...STOCKHOLM, radius_km: 10 } };

describe.each(STORAGE_KINDS)('filtered stream delivery on %s storage', (kind) => {
  let storage: TestStorage;
  let stream: StreamQueue;
  streamPerTest(
    kind,
    (fresh) => ({ storage, stream } = fresh),
    () => stream,
  );

  /** Subscribes with `params` and collects deliveries (acked by the callback's return). */
  async function collect(params: SubscribeParams): Promise<Message[]> {
    const seen: Message[] = [];
    await stream.subscribe(params, (m) => {
      seen.push(m);
    });
    return seen;
  }

  const bodies = (messages: readonly Message[]) => messages.map((m) => m.bodyString());

  it('skips what the filter does not match and moves past it', async () => {
    await stream.publish('blue-1', tagged('blue'));
    await stream.publish('red-1', tagged('red'));
    const seen = await collect({ args: { 'x-stream-offset': 'first', 'x-stream-filter': 'red' } });
    await settle();
    await stream.publish('blue-2', tagged('blue'));
    await stream.publish('red-2', tagged('red'));
    await settle();
    expect(bodies(seen)).toEqual(['red-1', 'red-2']);
    expect(offsetsOf(seen)).toEqual([2, 4]);
  });

  it('delivers what was published when the publisher reuses its buffer right after publish()', async () => {
    const buffer = Buffer.from('plain');
    let publishing = stream.publish(buffer, tagged('red'));
    buffer.write('xxxxx');
    await publishing;
    // An indexed consumer at the end is handed the message of the tick itself.
    const red = await collect({ args: { 'x-stream-offset': 'next', 'x-stream-filter': 'red' } });
    await settle();
    buffer.write('index');
    publishing = stream.publish(buffer, tagged('red'));
    buffer.write('yyyyy');
    await publishing;
    await settle();
    expect(bodies(red)).toEqual(['index']);
    const all = await collect({ args: { 'x-stream-offset': 'first' } });
    await settle();
    expect(bodies(all)).toEqual(['plain', 'index']);
  });

  it('never holds back a tracked offset with skipped messages', async () => {
    for (const value of ['red', 'blue', 'blue']) await stream.publish(value, tagged(value));
    const held: Message[] = [];
    const sub = await stream.subscribe(
      { tag: 'reds', manualAck: true, args: { 'x-stream-filter': 'red' } },
      (m) => {
        held.push(m);
      },
    );
    await settle();
    expect(offsetsOf(held)).toEqual([1]);
    expect(stream.storedOffset('reds')).toBeUndefined(); // delivered, nothing settled yet
    await held[0]!.ack();
    expect(stream.storedOffset('reds')).toBe(4); // the two blues do not hold it back
    await stream.publish('blue', tagged('blue'));
    await settle();
    expect(stream.storedOffset('reds')).toBe(5);

    await sub.cancel();
    await stream.close();
    await storage.reopen();
    stream = await openStream(storage);
    await stream.publish('red', tagged('red'));
    const resumed = await collect({ tag: 'reds', args: { 'x-stream-filter': 'red' } });
    await settle();
    expect(offsetsOf(resumed)).toEqual([5]);
  });

  it('keeps a tracked geo consumer waiting at the end past messages outside its region', async () => {
    const seen = await collect({
      tag: 'nearby',
      args: {
        'x-stream-offset': 'next',
        'x-stream-automatic-offset-tracking': true,
        'x-stream-filter': NEAR_STOCKHOLM,
      },
    });
    await stream.publish('paris', at(48.85, 2.35));
    await stream.publish('stockholm', at(59.33, 18.06));
    await stream.publish('rome', at(41.9, 12.5));
    await settle();
    expect(bodies(seen)).toEqual(['stockholm']);
    expect(stream.storedOffset('nearby')).toBe(4);
  });

  it('redelivers a requeued message to a filtered consumer before newer matches, unfiltered again', async () => {
    await stream.publish('red-1', tagged('red'));
    await stream.publish('blue', tagged('blue'));
    await stream.publish('red-2', tagged('red'));
    const seen: Message[] = [];
    await stream.subscribe(
      {
        prefetch: 1,
        manualAck: true,
        args: { 'x-stream-offset': 'first', 'x-stream-filter': 'red' },
      },
      (m) => {
        seen.push(m);
      },
    );
    await settle();
    await seen[0]!.nack(true);
    await settle();
    await seen[1]!.ack();
    await settle();
    expect(seen.map((m) => [m.bodyString(), m.redelivered])).toEqual([
      ['red-1', false],
      ['red-1', true],
      ['red-2', false],
    ]);
  });

  it('redelivers a requeued message to a consumer waiting in the geo index', async () => {
    const seen: Message[] = [];
    await stream.subscribe(
      { manualAck: true, args: { 'x-stream-offset': 'next', 'x-stream-filter': NEAR_STOCKHOLM } },
      (m) => {
        seen.push(m);
        if (!m.redelivered) void m.nack(true);
        else void m.ack();
      },
    );
    await stream.publish('stockholm', at(59.33, 18.06));
    await settle();
    await stream.publish('paris', at(48.85, 2.35));
    await stream.publish('solna', at(59.36, 18.0));
    await settle();
    expect(seen.map((m) => [m.bodyString(), m.redelivered])).toEqual([
      ['stockholm', false],
      ['stockholm', true],
      ['solna', false],
      ['solna', true],
    ]);
  });

  it('delivers messages without a filter value with x-stream-match-unfiltered', async () => {
    await stream.publish('red', tagged('red'));
    await stream.publish('blue', tagged('blue'));
    await stream.publish('plain');
    await stream.publish('other-headers', { headers: { region: 'eu' } });
    const seen = await collect({
      args: {
        'x-stream-offset': 'first',
        'x-stream-filter': 'red',
        'x-stream-match-unfiltered': true,
      },
    });
    await settle();
    expect(bodies(seen)).toEqual(['red', 'plain', 'other-headers']);
  });

  it('looks only at the filter-value header for match-unfiltered, whatever the filters', async () => {
    const seen = await collect({
      args: {
        'x-stream-offset': 'next',
        'x-stream-filter': NEAR_STOCKHOLM,
        'x-stream-match-unfiltered': true,
      },
    });
    await stream.publish('paris-untagged', at(48.85, 2.35));
    await stream.publish('paris-tagged', at(48.85, 2.35, { 'x-stream-filter-value': 'city' }));
    await stream.publish('stockholm-tagged', at(59.33, 18.06, { 'x-stream-filter-value': 'city' }));
    await settle();
    expect(bodies(seen)).toEqual(['paris-untagged', 'stockholm-tagged']);
  });

  it('needs every filter by default and one with x-filter-match-type any', async () => {
    const publish = (body: string, headers: FieldTable) => stream.publish(body, { headers });
    await publish('both', { 'x-stream-filter-value': 'red,blue', region: 'eu' });
    await publish('red-eu', { 'x-stream-filter-value': 'red', region: 'eu' });
    await publish('blue-us', { 'x-stream-filter-value': 'blue', region: 'us' });
    await publish('none', { region: 'us' });
    await publish('shard-5', { shard: 5 });
    const run = (filter: unknown, matchType?: string) =>
      collect({
        args: {
          'x-stream-offset': 'first',
          'x-stream-filter': filter as FieldTable,
          ...(matchType && { 'x-filter-match-type': matchType }),
        },
      });
    const all = await run('red,blue');
    const any = await run('red,blue', 'ANY');
    const mixedAll = await run({ 'x-stream-filter': 'red', region: 'eu' });
    const mixedAny = await run({ 'x-stream-filter': 'blue', region: 'eu' }, 'any');
    const numeric = await run({ shard: '5' });
    await settle();
    expect(bodies(all)).toEqual(['both']);
    expect(bodies(any)).toEqual(['both', 'red-eu', 'blue-us']);
    expect(bodies(mixedAll)).toEqual(['both', 'red-eu']);
    expect(bodies(mixedAny)).toEqual(['both', 'red-eu', 'blue-us']);
    expect(bodies(numeric)).toEqual(['shard-5']);
  });

  describe.each([
    ['waiting at the end', 'next'],
    ['replaying history', 'first'],
  ] as const)('geo filters, %s', (_, start) => {
    const filters = {
      radius: NEAR_STOCKHOLM,
      bbox: { 'geo-bbox': { min_lat: 59, max_lat: 60, min_lon: 17.5, max_lon: 18.5 } },
      polygon: {
        'geo-polygon': {
          points: [
            [59, 17.5],
            [60, 17.5],
            [60, 18.5],
            [59, 18.5],
          ],
        },
      },
    };

    it.each(Object.keys(filters) as (keyof typeof filters)[])(
      '%s: delivers the points inside; missing coordinates stop nothing, invalid ones match nothing',
      async (shape) => {
        const publishAll = async () => {
          await stream.publish('no-coordinates');
          await stream.publish('no-lon', { headers: { 'x-geo-lat': 59.33 } });
          for (const [lat, lon] of [
            ['59.33', '18.06'],
            [95, 18.06],
            [59.33, 200],
            [Number.NaN, 18.06],
          ] as const) {
            // Stored, as on LavinMQ (strict mode refuses them).
            await stream.publish('invalid', at(lat, lon));
          }
          await stream.publish('paris', at(48.85, 2.35));
          await stream.publish('stockholm', at(59.33, 18.06));
          await stream.publish('bigint', at(59n, 18n));
        };
        if (start === 'first') await publishAll();
        const seen: Message[] = [];
        const sub = await stream.subscribe(
          { args: { 'x-stream-offset': start, 'x-stream-filter': filters[shape] } },
          (m) => {
            seen.push(m);
          },
        );
        if (start === 'next') await publishAll();
        await settle();
        await stream.publish('later', at(59.34, 18.05));
        await settle();
        const inside =
          shape === 'radius' ? ['stockholm', 'later'] : ['stockholm', 'bigint', 'later'];
        expect(bodies(seen)).toEqual(inside);
        expect(sub.active).toBe(true);
      },
    );
  });

  it.each([
    [{ 'x-stream-filter': 42 }, 'x-stream-filter must be a string, table, or array'],
    [
      { 'x-stream-filter': 'a', 'x-filter-match-type': 'some' },
      "x-filter-match-type must be 'any' or 'all'",
    ],
    [
      { 'x-stream-filter': 'a', 'x-stream-match-unfiltered': 'yes' },
      'x-stream-match-unfiltered must be a boolean',
    ],
    [
      { 'x-stream-filter': { 'geo-within-radius': { lat: 1, lon: 2 } } },
      'geo-within-radius: radius_km',
    ],
    [
      { 'x-stream-filter': { 'geo-within-radius': { lat: 1, lon: 2, radius_km: 0 } } },
      'geo-within-radius: radius_km',
    ],
    [
      { 'x-stream-filter': { 'geo-within-radius': { lat: 'x', lon: 2, radius_km: 1 } } },
      'geo-within-radius: lat',
    ],
    [
      { 'x-stream-filter': { 'geo-within-radius': { lat: 91, lon: 2, radius_km: 1 } } },
      'geo-within-radius: lat',
    ],
    [
      { 'x-stream-filter': { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 0, max_lon: 181 } } },
      'geo-bbox: max_lon',
    ],
    [
      { 'x-stream-filter': { 'geo-bbox': { min_lat: 2, max_lat: 1, min_lon: 0, max_lon: 1 } } },
      'geo-bbox: min_lat',
    ],
    [
      { 'x-stream-filter': { 'geo-bbox': { min_lat: 0, max_lat: 1, min_lon: 5, max_lon: 1 } } },
      'geo-bbox: min_lon',
    ],
    [
      {
        'x-stream-filter': {
          'geo-polygon': {
            points: [
              [0, 0],
              [1, 1],
            ],
          },
        },
      },
      'geo-polygon: points',
    ],
    [
      { 'x-stream-filter': { 'geo-polygon': { points: [[0, 0], [1], [1, 1]] } } },
      'geo-polygon: points[1]',
    ],
  ])('refuses %j with 406 naming the key, changing nothing', async (args, message) => {
    const error = await stream
      .subscribe({ tag: 'bad', args: args as FieldTable }, () => {})
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MqliteError);
    expect((error as MqliteError).replyCode).toBe(406);
    expect((error as Error).message).toContain(message);
    expect(stream.consumerCount).toBe(0);
    expect(stream.storedOffset('bad')).toBeUndefined();
  });
});

/** Deterministic PRNG (mulberry32), so a failure replays. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.each(STORAGE_KINDS)('many consumers at the end of a stream on %s storage', (kind) => {
  let storage: TestStorage;
  let stream: StreamQueue;
  const counter: ReadCounter = { records: 0 };

  beforeEach(async () => {
    storage = new TestStorage(kind);
    stream = await openStream(storage, { storage: countReads(storage.storage, counter) });
  });
  afterEach(async () => {
    await stream.close();
    await storage.dispose();
  });

  it('hands indexed consumers their matches and asks the others about every message', async () => {
    const random = rng(42);
    const CIRCLES = 300;
    const POINTS = 400;
    const circles = Array.from({ length: CIRCLES }, () => ({
      lat: 45 + 10 * random(),
      lon: 5 + 10 * random(),
      radius_km: 20 + 80 * random(),
    }));
    const received = circles.map(() => [] as number[]);
    for (const [i, circle] of circles.entries()) {
      await stream.subscribe(
        { args: { 'x-stream-offset': 'next', 'x-stream-filter': { 'geo-within-radius': circle } } },
        (m) => {
          received[i]!.push(m.offset!);
        },
      );
    }
    // Indexed by filter value: 'red' (all), 'red' or 'blue' (any). Not indexed: no filter, and a
    // value or a geo filter (any).
    const everything: number[] = [];
    const reds: number[] = [];
    const redOrBlue: number[] = [];
    const redOrNear: number[] = [];
    const next = { 'x-stream-offset': 'next' };
    await stream.subscribe({ args: next }, (m) => {
      everything.push(m.offset!);
    });
    await stream.subscribe({ args: { ...next, 'x-stream-filter': 'red' } }, (m) => {
      reds.push(m.offset!);
    });
    await stream.subscribe(
      { args: { ...next, 'x-stream-filter': 'red,blue', 'x-filter-match-type': 'any' } },
      (m) => {
        redOrBlue.push(m.offset!);
      },
    );
    await stream.subscribe(
      {
        args: {
          ...next,
          'x-stream-filter': { 'x-stream-filter-value': 'red', 'geo-within-radius': circles[0]! },
          'x-filter-match-type': 'any',
        },
      },
      (m) => {
        redOrNear.push(m.offset!);
      },
    );

    const points = Array.from({ length: POINTS }, (_, i) => ({
      lat: 45 + 10 * random(),
      lon: 5 + 10 * random(),
      value: i % 7 === 0 ? 'red' : i % 5 === 0 ? 'blue,green' : undefined,
    }));
    counter.records = 0;
    // Several publish ticks, so consumers go back to waiting between them.
    for (let tick = 0; tick < 4; tick++) {
      for (let i = tick * 100; i < (tick + 1) * 100; i++) {
        const p = points[i]!;
        void stream.publish(
          `p${i}`,
          at(p.lat, p.lon, p.value ? { 'x-stream-filter-value': p.value } : {}),
        );
      }
      await settle();
    }
    await settle();

    const inside = (c: (typeof circles)[number], p: (typeof points)[number]) =>
      haversineKm(c.lat, c.lon, p.lat, p.lon) <= c.radius_km;
    const expected = circles.map((c) => points.flatMap((p, i) => (inside(c, p) ? [i + 1] : [])));
    expect(received).toEqual(expected);
    const matches = expected.reduce((n, list) => n + list.length, 0);
    expect(matches).toBeGreaterThan(0);
    expect(everything).toEqual(points.map((_, i) => i + 1));
    expect(reds).toEqual(points.flatMap((p, i) => (p.value === 'red' ? [i + 1] : [])));
    expect(redOrBlue).toEqual(points.flatMap((p, i) => (p.value ? [i + 1] : [])));
    expect(redOrNear).toEqual(
      points.flatMap((p, i) => (p.value === 'red' || inside(circles[0]!, p) ? [i + 1] : [])),
    );
    // Indexed consumers are handed their matches without reading; the two others read everything.
    expect(counter.records).toBe(2 * POINTS);
  });

  it('hands matches in order past batch limits, to consumers changing under the deliveries', async () => {
    // 150 consumers around one point: every message matches them all, more than one batch.
    const near = { 'geo-within-radius': { lat: 50, lon: 10, radius_km: 50 } };
    const args = { 'x-stream-offset': 'next', 'x-stream-filter': near };
    const received: number[][] = [];
    const subs: Subscription<number>[] = [];
    for (let i = 0; i < 150; i++) {
      const mine: number[] = [];
      received.push(mine);
      // Every third consumer has room for one message and acknowledges by hand; the first one
      // cancels the last consumer on its first delivery, before the last one is handed it.
      const manual = i % 3 === 1;
      subs.push(
        await stream.subscribe({ prefetch: manual ? 1 : 1000, manualAck: manual, args }, (m) => {
          mine.push(m.offset!);
          if (i === 0 && mine.length === 1) void subs[149]!.cancel();
        }),
      );
    }
    for (let i = 0; i < 3; i++) void stream.publish(`p${i}`, at(50, 10));
    await settle();
    await settle();
    for (const [i, mine] of received.entries()) {
      if (i === 149) expect(mine).toEqual([]);
      else if (i % 3 === 1) expect(mine).toEqual([1]);
      else expect(mine).toEqual([1, 2, 3]);
    }
    // Acked, the full ones read the rest from the log, in order.
    for (const [i, sub] of subs.entries()) if (i % 3 === 1) await sub.ack(1, true);
    await settle();
    for (const [i, mine] of received.entries()) {
      if (i % 3 === 1) expect(mine.slice(0, 2)).toEqual([1, 2]);
    }
  });
});
