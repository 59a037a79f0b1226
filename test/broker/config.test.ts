import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { InvalidConfigError } from '../../src/errors.js';
import { LastValueQueue } from '../../src/queues/lvq/last-value-queue.js';
import { PriorityQueue, Queue } from '../../src/queues/priority-queue.js';
import { StreamQueue } from '../../src/queues/stream/stream-queue.js';
import { fsStorage } from '../../src/storage/fs/index.js';

describe('queues declared from a config', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mqlite-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('declares every kind from a JSON file at startup', async () => {
    const file = path.join(dir, 'mqlite.json');
    await writeFile(
      file,
      JSON.stringify({
        queues: {
          prices: { lvq: true, lvqKey: 'ISIN' },
          ticks: { type: 'lvq' },
          jobs: { maxPriority: 9, arguments: { 'x-message-ttl': 60000 } },
          urgent: { type: 'priority', arguments: { 'x-max-priority': 2 } },
          events: { type: 'stream', maxAge: '7D' },
          plain: {},
        },
      }),
    );
    await using broker = await Broker.open({ config: file });
    const kinds = Object.fromEntries(broker.queues().map((q) => [q.name, q.kind]));
    expect(kinds).toEqual({
      prices: 'lvq',
      ticks: 'lvq',
      jobs: 'priority',
      urgent: 'priority',
      events: 'stream',
      plain: 'classic',
    });
    const prices = await broker.queue('prices', { passive: true });
    expect(prices).toBeInstanceOf(LastValueQueue);
    expect((prices as LastValueQueue).key).toBe('ISIN');
    expect(((await broker.queue('ticks', { passive: true })) as LastValueQueue).key).toBe(
      'qpid.LVQ_key',
    );
    expect(await broker.queue('jobs', { passive: true })).toBeInstanceOf(PriorityQueue);
    expect(await broker.queue('events', { passive: true })).toBeInstanceOf(StreamQueue);
    expect(await broker.queue('plain', { passive: true })).toBeInstanceOf(Queue);
  });

  it('takes the config as an object, with queues as an array of named entries', async () => {
    await using broker = await Broker.open({
      config: {
        queues: [
          { name: 'a', maxLength: 10 },
          { name: 'b', type: 'stream' },
        ],
      },
    });
    expect(broker.queues().map((q) => [q.name, q.kind, q.arguments])).toEqual([
      ['a', 'classic', { 'x-max-length': 10 }],
      ['b', 'stream', { 'x-queue-type': 'stream' }],
    ]);
  });

  it('reports a bad argument naming the config, the queue and the argument, declaring nothing', async () => {
    const file = path.join(dir, 'mqlite.json');
    await writeFile(
      file,
      JSON.stringify({ queues: { good: {}, jobs: { arguments: { 'x-max-priority': 300 } } } }),
    );
    const storage = fsStorage({ dir: path.join(dir, 'data') });
    await expect(Broker.open({ config: file, storage })).rejects.toMatchObject({
      code: 'MQLITE_PRECONDITION_FAILED',
      replyCode: 406,
      message: `PRECONDITION_FAILED - config ${file}: queue 'jobs': invalid arg 'x-max-priority' for queue 'jobs' in vhost '/': must be an integer 0..255, got 300`,
    });
    await using broker = await Broker.open({ storage: fsStorage({ dir: path.join(dir, 'data') }) });
    expect(broker.queues()).toEqual([]);
  });

  it('reports malformed configs with an InvalidConfigError naming the file, entry and field', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, '{ "queues": ');
    const invalid = (message: string | RegExp) => ({
      name: 'InvalidConfigError',
      code: 'MQLITE_INVALID_CONFIG',
      replyCode: 406,
      message: typeof message === 'string' ? `PRECONDITION_FAILED - ${message}` : message,
    });
    await expect(Broker.open({ config: file })).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(Broker.open({ config: file })).rejects.toThrow(
      new RegExp(`^PRECONDITION_FAILED - config ${file.replaceAll('/', '\\/')}: not valid JSON`),
    );
    await expect(
      Broker.open({ config: { queues: { q: { maxPriorty: 1 } } } as never }),
    ).rejects.toMatchObject(invalid("config: queue 'q': unknown queue option 'maxPriorty'"));
    await expect(
      Broker.open({ config: { queues: { q: { type: 'sorted' } } } as never }),
    ).rejects.toMatchObject(
      invalid(
        `config: queue 'q': option 'type' must be 'classic', 'stream', 'lvq' or 'priority', got "sorted"`,
      ),
    );
    await expect(
      Broker.open({ config: { queues: { q: { type: 'priority' } } } }),
    ).rejects.toMatchObject(invalid("config: queue 'q': type 'priority' needs 'maxPriority'"));
    await expect(Broker.open({ config: { topics: {} } as never })).rejects.toMatchObject(
      invalid("config: unknown key 'topics'"),
    );
    await expect(
      Broker.open({ config: { exchanges: { logs: { type: 'topic', durabel: true } } } as never }),
    ).rejects.toMatchObject(invalid("config: exchange 'logs': unknown field 'durabel'"));
    await expect(
      Broker.open({ config: { bindings: [{ source: 'amq.topic', destination: 7 }] } as never }),
    ).rejects.toMatchObject(
      invalid("config: bindings[0]: field 'destination' must be a string, got 7"),
    );
    await expect(Broker.open({ config: { queues: { 'amq.x': {} } } })).rejects.toMatchObject({
      replyCode: 403,
      message:
        "ACCESS_REFUSED - config: queue 'amq.x': queue name 'amq.x' contains reserved prefix 'amq.*'",
    });
  });

  it('checks a config against the queues a reopened broker already has', async () => {
    const data = path.join(dir, 'data');
    {
      await using broker = await Broker.open({
        storage: fsStorage({ dir: data }),
        config: { queues: { jobs: { maxPriority: 5 } } },
      });
      await (await broker.queue('jobs', { maxPriority: 5 })).publish('kept');
    }
    {
      // The same config again: the queue and its message are there.
      await using broker = await Broker.open({
        storage: fsStorage({ dir: data }),
        config: { queues: { jobs: { maxPriority: 5 } } },
      });
      expect(broker.queues()[0]?.messages).toBe(1);
    }
    await expect(
      Broker.open({
        storage: fsStorage({ dir: data }),
        config: { queues: { jobs: { maxPriority: 7 } } },
      }),
    ).rejects.toThrow(
      "PRECONDITION_FAILED - config: queue 'jobs': inequivalent arg 'x-max-priority' for queue 'jobs' in vhost '/': received '7' but current is '5'",
    );
  });

  it('declares the Qpid last-value queue bound to amq.direct by its own name', async () => {
    const file = path.join(dir, 'virtualhost.json');
    await writeFile(
      file,
      JSON.stringify({
        queues: { prices: { type: 'lvq', lvqKey: 'ISIN', exchange: 'amq.direct' } },
      }),
    );
    await using broker = await Broker.open({ config: file });
    expect(broker.bindings('prices')).toEqual([
      { source: 'amq.direct', routingKey: 'prices', args: {} },
    ]);
    const direct = await broker.directExchange();
    for (const [isin, price] of [
      ['GB00B03MLX29', 100],
      ['US0378331005', 50],
      ['GB00B03MLX29', 101],
    ]) {
      await direct.publish(String(price), { routingKey: 'prices', headers: { ISIN: isin } });
    }
    const prices = await broker.queue('prices', { passive: true });
    expect(prices).toBeInstanceOf(LastValueQueue);
    const got: string[] = [];
    for (let m = await prices.get(); m; m = await prices.get()) got.push(m.bodyString());
    expect(got.sort()).toEqual(['101', '50']);
  });

  it('declares exchanges and bindings, queues binding themselves with a routing key of their own', async () => {
    await using broker = await Broker.open({
      config: {
        exchanges: { logs: { type: 'topic' }, all: { type: 'fanout', durable: false } },
        queues: {
          errors: { exchange: 'logs', routingKey: '*.error' },
          everything: {},
        },
        bindings: [
          { source: 'logs', destination: 'all', destinationType: 'exchange', routingKey: '#' },
          { source: 'all', destination: 'everything' },
        ],
      },
    });
    expect(broker.exchanges().find((e) => e.name === 'all')?.durable).toBe(false);
    await broker.publish('logs', 'disk', { routingKey: 'db.error' });
    await broker.publish('logs', 'up', { routingKey: 'db.info' });
    const bodies = async (name: string) => {
      const q = await broker.queue(name, { passive: true });
      const out: string[] = [];
      for (let m = await q.get(); m; m = await q.get()) out.push(m.bodyString());
      return out;
    };
    expect(await bodies('errors')).toEqual(['disk']);
    expect(await bodies('everything')).toEqual(['disk', 'up']);
  });

  it('loads a config twice as a no-op, and refuses an exchange that differs, naming it', async () => {
    const data = path.join(dir, 'data');
    const config = {
      exchanges: { logs: { type: 'topic' as const } },
      queues: { errors: { exchange: 'logs', routingKey: '*.error' } },
    };
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir: data }), config });
      await broker.publish('logs', 'kept', { routingKey: 'a.error' });
    }
    {
      await using broker = await Broker.open({ storage: fsStorage({ dir: data }), config });
      expect(broker.queues()[0]?.messages).toBe(1);
      expect(broker.bindings('errors')).toHaveLength(1);
    }
    await expect(
      Broker.open({
        storage: fsStorage({ dir: data }),
        config: { ...config, exchanges: { logs: { type: 'fanout' } } },
      }),
    ).rejects.toThrow(
      "PRECONDITION_FAILED - config: exchange 'logs': inequivalent arg 'type' for exchange 'logs' in vhost '/': received 'fanout' but current is 'topic'",
    );
    await expect(
      Broker.open({ config: { queues: { q: { exchange: 'missing' } } } }),
    ).rejects.toThrow(
      "config: binding of queue 'q' to exchange 'missing' with routing key 'q': no exchange 'missing' to bind to",
    );
  });
});
