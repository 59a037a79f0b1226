/**
 * The damage matrix: each kind of on-disk damage, made by editing the bytes of a data directory,
 * must be reported through `onError`, stay in the queue it is in, and never cut confirmed data
 * silently.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { CorruptionError, DataLossError } from '../../src/errors.js';
import type { Queue } from '../../src/queues/priority-queue.js';
import type { StreamQueue } from '../../src/queues/stream/stream-queue.js';
import { abandonFsStorage, fsStorage } from '../../src/storage/fs/index.js';
import { chunkStartOf, framesOf } from '../support/segment-file.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(tmpdir(), 'mqlite-damage-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Opens a broker on `dir`, collecting what it reports. */
async function open(reports: unknown[] = []) {
  const broker = await Broker.open({
    storage: fsStorage({ dir, segmentBytes: 2000 }),
    onError: (error) => reports.push(error),
  });
  return { broker, reports };
}

/** A broker with a classic queue `jobs` and a stream `events` of 100 messages each, closed. */
async function seed(options: { crash?: boolean } = {}): Promise<void> {
  const storage = fsStorage({ dir, segmentBytes: 2000 });
  const broker = await Broker.open({ storage });
  const jobs = await broker.queue('jobs');
  const events = await broker.queue('events', { type: 'stream' });
  await events.bind('amq.fanout');
  for (let i = 0; i < 100; i++) {
    await jobs.publish(`job ${i}`);
    await events.publish(`event ${i}`);
  }
  if (options.crash) abandonFsStorage(storage);
  else await broker.close();
}

const file = (...parts: string[]) => path.join(dir, ...parts);

function flipByte(at: string, position: number, mask = 0x01): void {
  const bytes = fs.readFileSync(at);
  bytes[position]! ^= mask;
  fs.writeFileSync(at, bytes);
}

function messages(broker: Broker, name: string): number | undefined {
  return broker.queues().find((q) => q.name === name)?.messages;
}

describe('a damaged segment', () => {
  it('a flipped length in the unindexed tail is a CorruptionError of that queue alone, not a cut', async () => {
    await seed({ crash: true });
    const seg = file('events', 'messages', '0000000001.seg');
    const before = fs.statSync(seg).size;
    const frames = framesOf(seg);
    const victim = frames[Math.floor(frames.length / 2)]!;
    const start = chunkStartOf(seg, victim.offset);
    flipByte(seg, victim.pos + 1, 0x40);
    const { broker, reports } = await open();
    try {
      expect(fs.statSync(seg).size).toBe(before);
      const damaged = broker.damaged()[0]!;
      expect(damaged.name).toBe('events');
      expect(damaged.error).toBeInstanceOf(CorruptionError);
      expect(damaged.error).toMatchObject({ file: seg, position: start });
      expect((damaged.error as CorruptionError).end).toBeGreaterThan(start);
      expect(reports).toContain(damaged.error);
      expect(messages(broker, 'jobs')).toBe(100);
      expect(broker.queues().find((q) => q.name === 'events')?.damaged).toBe(damaged.error);
      await expect(broker.queue('events', { type: 'stream' })).rejects.toBe(damaged.error);
      await expect(broker.purge('events')).rejects.toBe(damaged.error);
      // A fanout to it and a healthy queue stores in the healthy one and reports the damaged.
      const jobs = await broker.queue('jobs');
      await jobs.bind('amq.fanout');
      const fanout = await broker.fanoutExchange();
      await expect(fanout.publish('x')).rejects.toBe(damaged.error);
      expect(messages(broker, 'jobs')).toBe(101);
      await expect(jobs.bind('amq.direct', 'events')).resolves.toBe(jobs);
    } finally {
      await broker.close();
    }
  });

  it('a torn last write in the tail is cut and reported', async () => {
    await seed({ crash: true });
    const seg = file('events', 'messages', '0000000001.seg');
    const size = fs.statSync(seg).size;
    const last = framesOf(seg).at(-1)!;
    fs.truncateSync(seg, last.pos + 10);
    const { broker, reports } = await open();
    try {
      expect(broker.damaged()).toEqual([]);
      expect(reports).toEqual([
        expect.objectContaining({ kind: 'torn-write', file: seg, position: last.pos }),
      ]);
      expect(reports[0]).toBeInstanceOf(DataLossError);
      expect(fs.statSync(seg).size).toBe(last.pos);
      expect(size).toBeGreaterThan(last.pos);
      expect(messages(broker, 'events')).toBe(99);
    } finally {
      await broker.close();
    }
  });

  it('a flipped bit in a sealed segment rescanned on open keeps only its queue closed', async () => {
    await seed();
    const seg = file('jobs', 'prio.000', '0000000001.seg');
    fs.unlinkSync(file('jobs', 'prio.000', '0000000001.idx'));
    flipByte(seg, framesOf(seg)[3]!.pos + 30);
    const { broker, reports } = await open();
    try {
      expect(broker.damaged().map((d) => d.name)).toEqual(['jobs']);
      expect(reports).toEqual([expect.objectContaining({ file: seg })]);
      expect(messages(broker, 'events')).toBe(100);
      const events = (await broker.queue('events', { type: 'stream' })) as StreamQueue;
      expect(events.nextOffset).toBe(101);
      // Deleting the damaged queue removes it; it can then be declared anew.
      expect(await broker.deleteQueue('jobs')).toBe(0);
      expect(broker.damaged()).toEqual([]);
      expect(fs.existsSync(file('jobs'))).toBe(false);
      const jobs = await broker.queue('jobs');
      expect((jobs as Queue).stats().messages).toBe(0);
    } finally {
      await broker.close();
    }
  });
});

describe("the broker's metadata", () => {
  const meta = () => file('_', '~meta');

  it('a flipped bit loses no queue: the damage is reported and skipped', async () => {
    await seed();
    const bytes = fs.readFileSync(meta());
    const at = bytes.indexOf('queue:events');
    flipByte(meta(), at + 2);
    const { broker, reports } = await open();
    try {
      expect(broker.queues().map((q) => [q.name, q.messages])).toEqual([
        ['events', 100],
        ['jobs', 100],
      ]);
      expect(reports).toEqual(
        expect.arrayContaining([expect.objectContaining({ kind: 'skipped', file: meta() })]),
      );
      expect(fs.readFileSync(`${meta()}.damaged`)).toEqual(
        Buffer.from(bytes.map((b, i) => (i === at + 2 ? b ^ 1 : b))),
      );
    } finally {
      await broker.close();
    }
  });

  it('when it is deleted, queues come back from the copy of their declaration', async () => {
    await seed();
    fs.rmSync(meta());
    fs.rmSync(`${meta()}.prev`, { force: true });
    const { broker, reports } = await open();
    try {
      expect(broker.queues().map((q) => [q.name, q.kind, q.messages])).toEqual([
        ['events', 'stream', 100],
        ['jobs', 'classic', 100],
      ]);
      expect(reports.filter((r) => (r as DataLossError).kind === 'restored')).toHaveLength(2);
      // Exchanges and bindings were in it too: its loss is reported as such.
      expect(reports).toContainEqual(
        expect.objectContaining({ kind: 'missing', file: meta(), code: 'MQLITE_DATA_LOSS' }),
      );
    } finally {
      await broker.close();
    }
    // Declared again for good: the next open reports nothing.
    const again = await open();
    expect(again.reports).toEqual([]);
    await again.broker.close();
  });

  it('when it is deleted, its previous version is restored and reported', async () => {
    await seed();
    const first = await open();
    await first.broker.queue('passing');
    await first.broker.deleteQueue('passing');
    await first.broker.close();
    // Reopening compacts the file, keeping the version it replaces.
    await (await open()).broker.close();
    expect(fs.existsSync(`${meta()}.prev`)).toBe(true);
    fs.rmSync(meta());
    const { broker, reports } = await open();
    try {
      expect(broker.queues().map((q) => q.name)).toEqual(['events', 'jobs']);
      expect(reports).toEqual([expect.objectContaining({ kind: 'restored', file: meta() })]);
    } finally {
      await broker.close();
    }
  });

  it('a zero-filled tail is a torn write, not a SyntaxError', async () => {
    await seed();
    fs.appendFileSync(meta(), Buffer.alloc(64));
    const { broker, reports } = await open();
    try {
      expect(broker.queues().map((q) => q.name)).toEqual(['events', 'jobs']);
      expect(reports).toEqual([expect.objectContaining({ kind: 'torn-write', file: meta() })]);
    } finally {
      await broker.close();
    }
  });

  it('garbage over the whole file is kept aside, reported, and the queues come back', async () => {
    await seed();
    const garbage = Buffer.alloc(fs.statSync(meta()).size, 0x5a);
    fs.writeFileSync(meta(), garbage);
    fs.rmSync(`${meta()}.prev`, { force: true });
    const { broker, reports } = await open();
    try {
      expect(fs.readFileSync(`${meta()}.damaged`)).toEqual(garbage);
      expect(reports[0]).toBeInstanceOf(DataLossError);
      expect(broker.queues().map((q) => [q.name, q.messages])).toEqual([
        ['events', 100],
        ['jobs', 100],
      ]);
    } finally {
      await broker.close();
    }
  });

  it('a malformed declaration is replaced by the copy in its directory, and reported', async () => {
    await seed();
    const storage = fsStorage({ dir });
    (await storage.namespace('')).meta.set('queue:jobs', { durable: 'yes' });
    await storage.close();
    const { broker, reports } = await open();
    try {
      expect(broker.damaged()).toEqual([]);
      expect(reports).toEqual([expect.objectContaining({ kind: 'restored' })]);
      expect(messages(broker, 'jobs')).toBe(100);
      expect(messages(broker, 'events')).toBe(100);
    } finally {
      await broker.close();
    }
  });

  it('a malformed declaration of a directory without its copy keeps only its queue closed', async () => {
    await seed();
    const storage = fsStorage({ dir });
    (await storage.namespace('')).meta.set('queue:jobs', { durable: 'yes' });
    (await storage.namespace('jobs')).meta.delete('broker.declaration');
    await storage.close();
    const { broker, reports } = await open();
    try {
      expect(broker.damaged()).toEqual([
        { name: 'jobs', declaration: undefined, error: expect.any(CorruptionError) },
      ]);
      expect(reports).toEqual([broker.damaged()[0]!.error]);
      expect(messages(broker, 'events')).toBe(100);
      await expect(broker.queue('jobs')).rejects.toBe(broker.damaged()[0]!.error);
      expect(fs.existsSync(file('jobs'))).toBe(true);
    } finally {
      await broker.close();
    }
  });

  it('a queue directory no declaration names is listed as damaged, not forgotten', async () => {
    await seed();
    const storage = fsStorage({ dir });
    const stray = await storage.namespace('stray');
    stray.meta.set('x', 1);
    await storage.close();
    const { broker, reports } = await open();
    try {
      expect(broker.damaged()).toEqual([
        { name: 'stray', declaration: undefined, error: expect.any(CorruptionError) },
      ]);
      expect(reports).toEqual([broker.damaged()[0]!.error]);
      expect(broker.queues().map((q) => q.name)).toEqual(['events', 'jobs']);
      await broker.deleteQueue('stray');
      expect(fs.existsSync(file('stray'))).toBe(false);
    } finally {
      await broker.close();
    }
  });
});

describe('missing queue data', () => {
  it("a classic queue's missing directory is reported, and the queue is not recreated empty", async () => {
    await seed();
    fs.rmSync(file('jobs'), { recursive: true });
    const { broker, reports } = await open();
    try {
      const [damaged] = broker.damaged();
      expect(damaged).toMatchObject({ name: 'jobs', declaration: { kind: 'classic' } });
      expect(reports).toEqual([damaged!.error]);
      expect(messages(broker, 'events')).toBe(100);
      expect(fs.existsSync(file('jobs'))).toBe(false);
    } finally {
      await broker.close();
    }
  });
});

describe("a classic or priority queue's lost segments", () => {
  const segmentsOf = (log: string) =>
    fs
      .readdirSync(file(...log.split('/')))
      .filter((f) => f.endsWith('.seg'))
      .sort();

  /** Queue `name` with 100 messages in segments of about ten, closed. */
  async function seedQueue(name: string, args: Record<string, unknown> = {}): Promise<void> {
    const broker = await Broker.open({ storage: fsStorage({ dir, segmentBytes: 600 }) });
    const queue = await broker.queue(name, { arguments: args });
    await broker.queue('events', { type: 'stream' });
    for (let i = 0; i < 100; i++) await queue.publish(`${name} ${i}`, { priority: 2 });
    await broker.close();
  }

  for (const which of ['middle', 'tail'] as const) {
    it(`a missing ${which} segment of a classic queue is reported, the rest delivered`, async () => {
      await seedQueue('jobs');
      const segments = segmentsOf('jobs/prio.000');
      expect(segments.length).toBeGreaterThan(2);
      const lost = which === 'middle' ? segments[1]! : segments.at(-1)!;
      const lostFile = file('jobs', 'prio.000', lost);
      const lostCount = framesOf(lostFile).length;
      fs.rmSync(lostFile);
      fs.rmSync(lostFile.replace('.seg', '.idx'), { force: true });
      const { broker, reports } = await open();
      try {
        expect(reports).toEqual([
          expect.objectContaining({ kind: 'missing', file: lostFile, code: 'MQLITE_DATA_LOSS' }),
        ]);
        expect(reports[0]).toBeInstanceOf(DataLossError);
        expect(broker.damaged()).toEqual([]);
        expect(messages(broker, 'jobs')).toBe(100 - lostCount);
        expect(messages(broker, 'events')).toBe(0);
      } finally {
        await broker.close();
      }
      // Reported once: the loss is known from then on.
      const again = await open();
      expect(again.reports).toEqual([]);
      expect(messages(again.broker, 'jobs')).toBe(100 - lostCount);
      await again.broker.close();
    });
  }

  it("a missing segment of a priority queue's level is reported", async () => {
    await seedQueue('urgent', { 'x-max-priority': 3 });
    const level = fs
      .readdirSync(file('urgent'))
      .find((entry) => entry.startsWith('prio.') && segmentsOf(`urgent/${entry}`).length > 2)!;
    const lostFile = file('urgent', level, segmentsOf(`urgent/${level}`)[1]!);
    const lostCount = framesOf(lostFile).length;
    fs.rmSync(lostFile);
    const { broker: reopened, reports } = await open();
    try {
      expect(reports).toEqual([expect.objectContaining({ kind: 'missing', file: lostFile })]);
      expect(messages(reopened, 'urgent')).toBe(100 - lostCount);
    } finally {
      await reopened.close();
    }
  });
});

describe("a priority queue's lost level", () => {
  it('a missing level directory is reported, naming it; the other levels are delivered', async () => {
    const seeding = await open();
    const urgent = await seeding.broker.queue('urgent', { arguments: { 'x-max-priority': 3 } });
    for (let i = 0; i < 10; i++) await urgent.publish(`low ${i}`, { priority: 1 });
    for (let i = 0; i < 5; i++) await urgent.publish(`high ${i}`, { priority: 3 });
    // Level 3 delivered once: its redelivery mark is stored.
    const first = await urgent.get({ noAck: false });
    await first?.nack(true);
    await seeding.broker.close();
    const lost = file('urgent', 'prio.003');
    fs.rmSync(lost, { recursive: true });

    const { broker, reports } = await open();
    try {
      expect(reports).toEqual([
        expect.objectContaining({ kind: 'missing', file: lost, code: 'MQLITE_DATA_LOSS' }),
      ]);
      expect((reports[0] as Error).message).toContain("log 'prio.003' of namespace 'urgent'");
      expect(broker.damaged()).toEqual([]);
      expect(messages(broker, 'urgent')).toBe(10);
      const queue = await broker.queue('urgent', { arguments: { 'x-max-priority': 3 } });
      // The level starts again: new messages there are not taken for redeliveries.
      await queue.publish('high again', { priority: 3 });
      const next = await queue.get();
      expect([Buffer.from(next!.body).toString(), next?.redelivered]).toEqual([
        'high again',
        false,
      ]);
      expect(Buffer.from((await queue.get())!.body).toString()).toBe('low 0');
    } finally {
      await broker.close();
    }
    const again = await open();
    expect(again.reports).toEqual([]);
    await again.broker.close();
  });
});

describe("a stream's lost log", () => {
  it('a missing log directory is reported, naming it; the stream opens empty', async () => {
    await seed();
    const lost = file('events', 'messages');
    fs.rmSync(lost, { recursive: true });
    const { broker, reports } = await open();
    try {
      expect(reports).toEqual([
        expect.objectContaining({ kind: 'missing', file: lost, code: 'MQLITE_DATA_LOSS' }),
      ]);
      expect(broker.damaged()).toEqual([]);
      expect(messages(broker, 'events')).toBe(0);
      expect(messages(broker, 'jobs')).toBe(100);
    } finally {
      await broker.close();
    }
  });
});

describe("a stream's lost segments", () => {
  const STREAM = {
    arguments: { 'x-queue-type': 'stream', 'x-stream-max-segment-size-bytes': 400 },
  } as const;

  /** A stream of 100 messages in small segments, all acked by consumer `reader`. */
  async function seedStream(): Promise<string[]> {
    const broker = await Broker.open({ storage: fsStorage({ dir }) });
    const events = (await broker.queue('events', STREAM)) as StreamQueue;
    for (let i = 0; i < 100; i++) await events.publish(`event ${i}`);
    await events.subscribe({ tag: 'reader' }, (message) => message.ack());
    for (let round = 0; events.storedOffset('reader') !== 101; round++) {
      if (round > 10_000) throw new Error('the consumer never acked everything');
      await new Promise(setImmediate);
    }
    await broker.close();
    return fs
      .readdirSync(file('events', 'messages'))
      .filter((f) => f.endsWith('.seg'))
      .sort();
  }

  async function reopened(reports: unknown[]) {
    const { broker } = await open(reports);
    const events = (await broker.queue('events', STREAM)) as StreamQueue;
    return { broker, events };
  }

  it('a missing middle segment is reported as missing and as a gap, once', async () => {
    const segments = await seedStream();
    expect(segments.length).toBeGreaterThan(3);
    const lost = segments[1]!;
    const lostFirst = framesOf(file('events', 'messages', lost))[0]!.offset;
    fs.rmSync(file('events', 'messages', lost));
    fs.rmSync(file('events', 'messages', lost.replace('.seg', '.idx')), { force: true });
    const reports: unknown[] = [];
    const { broker, events } = await reopened(reports);
    expect(reports).toEqual([
      expect.objectContaining({ kind: 'missing', file: file('events', 'messages', lost) }),
      expect.objectContaining({ kind: 'gap', records: expect.any(Number) }),
    ]);
    expect((reports[1] as DataLossError).message).toContain(`offsets ${lostFirst} to`);
    expect(events.nextOffset).toBe(101);
    await broker.close();
    const again: unknown[] = [];
    await (await reopened(again)).broker.close();
    expect(again).toEqual([]);
  });

  it('a missing log directory is reported, and the stream continues after the stored offset', async () => {
    await seedStream();
    const lost = file('events', 'messages');
    fs.rmSync(lost, { recursive: true });
    const reports: unknown[] = [];
    const { broker, events } = await reopened(reports);
    try {
      expect(reports).toEqual([
        expect.objectContaining({ kind: 'missing', file: lost }),
        expect.objectContaining({ kind: 'reset', records: 100 }),
      ]);
      expect(events.nextOffset).toBe(101);
    } finally {
      await broker.close();
    }
  });

  it('a missing tail segment moves the stream past the offsets it handed out', async () => {
    const segments = await seedStream();
    const tail = segments.at(-1)!;
    const tailFirst = framesOf(file('events', 'messages', tail))[0]!.offset;
    fs.rmSync(file('events', 'messages', tail));
    fs.rmSync(file('events', 'messages', tail.replace('.seg', '.idx')), { force: true });
    const reports: unknown[] = [];
    const { broker, events } = await reopened(reports);
    try {
      expect(reports).toEqual([
        expect.objectContaining({ kind: 'missing', file: file('events', 'messages', tail) }),
        expect.objectContaining({ kind: 'gap' }),
      ]);
      const next = events.nextOffset;
      expect(next).toBeGreaterThan(100);
      expect((reports[1] as DataLossError).message).toContain(
        `offsets ${tailFirst} to ${next - 1}`,
      );
      await events.publish('after');
      const got: number[] = [];
      await events.subscribe({ tag: 'reader' }, (message) => {
        got.push(message.offset!);
        message.ack();
      });
      for (let round = 0; got.length === 0; round++) {
        if (round > 10_000) throw new Error('nothing delivered');
        await new Promise(setImmediate);
      }
      expect(got).toEqual([next]);
    } finally {
      await broker.close();
    }
  });

  it('a missing tail segment of a stream no consumer tracks does not hand its offsets out again', async () => {
    const broker = await Broker.open({ storage: fsStorage({ dir }) });
    const events = (await broker.queue('events', STREAM)) as StreamQueue;
    for (let i = 0; i < 100; i++) await events.publish(`event ${i}`);
    await broker.close();
    const segments = fs
      .readdirSync(file('events', 'messages'))
      .filter((f) => f.endsWith('.seg'))
      .sort();
    const tail = file('events', 'messages', segments.at(-1)!);
    fs.rmSync(tail);
    fs.rmSync(tail.replace('.seg', '.idx'), { force: true });
    const reports: unknown[] = [];
    const again = await reopened(reports);
    try {
      expect(reports).toContainEqual(expect.objectContaining({ kind: 'missing', file: tail }));
      expect(again.events.nextOffset).toBeGreaterThan(100);
    } finally {
      await again.broker.close();
    }
  });

  it("a damaged record of a stream's ~meta is reported, not a silent reset of its offsets", async () => {
    await seedStream();
    const meta = file('events', '~meta');
    const bytes = fs.readFileSync(meta);
    flipByte(meta, bytes.lastIndexOf('stream.offset.reader') + 3);
    const reports: unknown[] = [];
    const { broker } = await reopened(reports);
    try {
      expect(reports).toContainEqual(
        expect.objectContaining({ kind: 'skipped', file: meta, position: expect.any(Number) }),
      );
      expect(fs.readFileSync(`${meta}.damaged`).length).toBe(bytes.length);
    } finally {
      await broker.close();
    }
  });

  it('with every segment gone, each is reported and offsets do not rewind', async () => {
    const segments = await seedStream();
    for (const seg of segments) fs.rmSync(file('events', 'messages', seg));
    for (const f of fs.readdirSync(file('events', 'messages'))) {
      if (f.endsWith('.idx')) fs.rmSync(file('events', 'messages', f));
    }
    const reports: unknown[] = [];
    const { broker, events } = await reopened(reports);
    const resumed = events.nextOffset;
    try {
      expect(reports).toEqual(
        segments.map((seg) =>
          expect.objectContaining({ kind: 'missing', file: file('events', 'messages', seg) }),
        ),
      );
      expect(resumed).toBeGreaterThan(100);
      expect(events.storedOffset('reader')).toBe(101);
    } finally {
      await broker.close();
    }
    const again: unknown[] = [];
    const next = await reopened(again);
    expect(next.events.nextOffset).toBe(resumed);
    await next.broker.close();
    expect(again).toEqual([]);
  });
});
