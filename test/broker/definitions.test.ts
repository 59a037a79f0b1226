import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker, type BrokerQueue } from '../../src/broker/broker.js';
import { loadDefinitions } from '../../src/broker/definitions.js';
import { InvalidConfigError } from '../../src/errors.js';
import { fsStorage } from '../../src/storage/fs/index.js';

async function drain(queue: BrokerQueue): Promise<string[]> {
  const out: string[] = [];
  for (let m = await queue.get(); m; m = await queue.get()) out.push(m.bodyString());
  return out;
}

/** A definitions file as `rabbitmqctl export_definitions` writes it. */
const exported = () => ({
  rabbit_version: '3.10.8',
  rabbitmq_version: '3.10.8',
  users: [{ name: 'guest', password_hash: 'x', tags: ['administrator'], limits: {} }],
  vhosts: [{ name: '/', limits: [], metadata: { description: 'Default virtual host', tags: [] } }],
  permissions: [{ user: 'guest', vhost: '/', configure: '.*', write: '.*', read: '.*' }],
  topic_permissions: [],
  parameters: [],
  global_parameters: [{ name: 'internal_cluster_id', value: 'rabbitmq-cluster-id-x' }],
  policies: [],
  queues: [
    {
      name: 'jobs',
      vhost: '/',
      durable: true,
      auto_delete: false,
      arguments: { 'x-max-length': 2 },
      type: 'classic',
    },
    {
      name: 'events',
      vhost: '/',
      durable: true,
      auto_delete: false,
      arguments: {},
      type: 'stream',
    },
    {
      name: 'audit',
      vhost: '/',
      durable: false,
      auto_delete: false,
      arguments: {},
      type: 'classic',
    },
  ],
  exchanges: [
    { name: 'orders', vhost: '/', type: 'topic', durable: true, auto_delete: false, arguments: {} },
    {
      name: 'copies',
      vhost: '/',
      type: 'fanout',
      durable: true,
      auto_delete: false,
      arguments: {},
    },
  ],
  bindings: [
    {
      source: 'orders',
      vhost: '/',
      destination: 'jobs',
      destination_type: 'queue' as const,
      routing_key: 'orders.*',
      arguments: {},
    },
    {
      source: 'orders',
      vhost: '/',
      destination: 'copies',
      destination_type: 'exchange' as const,
      routing_key: '#',
      arguments: {},
    },
    {
      source: 'copies',
      vhost: '/',
      destination: 'audit',
      destination_type: 'queue' as const,
      routing_key: '',
      arguments: {},
    },
  ],
});

describe('definitions', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'mqlite-definitions-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("loads RabbitMQ's export: queues, exchanges and bindings to queues and exchanges", async () => {
    const file = path.join(dir, 'definitions.json');
    await writeFile(file, JSON.stringify(exported()));
    await using broker = await Broker.open({ definitions: file });
    expect(broker.queues().map((q) => [q.name, q.kind, q.durable, q.arguments])).toEqual([
      ['audit', 'classic', false, {}],
      ['events', 'stream', true, { 'x-queue-type': 'stream' }],
      ['jobs', 'classic', true, { 'x-max-length': 2 }],
    ]);
    for (const n of [1, 2, 3])
      await broker.publish('orders', `o${n}`, { routingKey: 'orders.new' });
    expect(await drain(await broker.queue('jobs', { passive: true }))).toEqual(['o2', 'o3']);
    expect(await drain(await broker.queue('audit', { passive: true }))).toEqual(['o1', 'o2', 'o3']);
  });

  it('exports what it loaded in the same form, and loads its own export', async () => {
    await using broker = await Broker.open({ definitions: exported() });
    await broker.queue('mine', { exclusive: true });
    await broker.exchange('hidden', 'direct', { internal: true, autoDelete: true });
    await broker.bindExchange('hidden', 'orders', 'x');
    const out = broker.exportDefinitions();
    expect(Object.keys(out).sort()).toEqual(
      [
        'bindings',
        'exchanges',
        'global_parameters',
        'parameters',
        'permissions',
        'policies',
        'product_name',
        'queues',
        'rabbit_version',
        'rabbitmq_version',
        'topic_permissions',
        'users',
        'vhosts',
      ].sort(),
    );
    expect(out.rabbit_version).toMatch(/^3\.10\./);
    const byName = <T extends { name: string }>(list: T[]) =>
      [...list].sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(byName(out.queues)).toEqual(
      byName(exported().queues).map((q) =>
        q.type === 'stream' ? { ...q, arguments: { 'x-queue-type': 'stream' } } : q,
      ),
    );
    expect(byName(out.exchanges)).toEqual(
      byName([
        ...exported().exchanges.map((e) => ({ ...e, internal: false })),
        {
          name: 'hidden',
          vhost: '/',
          type: 'direct',
          durable: true,
          auto_delete: true,
          internal: true,
          arguments: {},
        },
      ]),
    );
    const key = (b: { source: string; destination: string; routing_key: string }) =>
      `${b.source}>${b.destination}:${b.routing_key}`;
    expect(out.bindings.map(key).sort()).toEqual(
      [...exported().bindings.map(key), 'orders>hidden:x'].sort(),
    );
    await using again = await Broker.open({ definitions: out });
    expect(again.exportDefinitions()).toEqual(out);
  });

  it('is idempotent against what is stored, and a different declaration is the 406 of a redeclare', async () => {
    const data = path.join(dir, 'data');
    {
      await using broker = await Broker.open({
        storage: fsStorage({ dir: data }),
        definitions: exported(),
      });
      await broker.publish('orders', 'kept', { routingKey: 'orders.a' });
    }
    {
      await using broker = await Broker.open({
        storage: fsStorage({ dir: data }),
        definitions: exported(),
      });
      expect(broker.queues().find((q) => q.name === 'jobs')?.messages).toBe(1);
      expect(broker.bindings('jobs')).toEqual([
        { source: 'orders', routingKey: 'orders.*', args: {} },
      ]);
    }
    const changed = exported();
    changed.exchanges[0]!.type = 'direct';
    await expect(
      Broker.open({ storage: fsStorage({ dir: data }), definitions: changed }),
    ).rejects.toMatchObject({
      replyCode: 406,
      message:
        "PRECONDITION_FAILED - definitions: exchange 'orders': inequivalent arg 'type' for exchange 'orders' in vhost '/': received 'direct' but current is 'topic'",
    });
  });

  it('refuses entries of another vhost, naming the entry, and declares nothing', async () => {
    const defs = exported();
    (defs.queues[1] as { vhost: string }).vhost = 'staging';
    const data = path.join(dir, 'data');
    await expect(
      Broker.open({ storage: fsStorage({ dir: data }), definitions: defs }),
    ).rejects.toThrow(
      new InvalidConfigError(
        "definitions: queue 'events': is in vhost 'staging': a broker is the one vhost '/' (load each vhost's entries into a broker of its own)",
      ),
    );
    await using broker = await Broker.open({ storage: fsStorage({ dir: data }) });
    expect(broker.queues()).toEqual([]);
  });

  it('checks bindings against the file and the broker before declaring anything', async () => {
    const defs = exported();
    defs.bindings[2]!.destination = 'nowhere';
    await expect(Broker.open({ definitions: defs })).rejects.toThrow(
      "definitions: binding of queue 'nowhere' to exchange 'copies' with routing key '': no queue 'nowhere'",
    );
  });

  it('reads policies into a typed list, checking their fields', async () => {
    const policy = {
      vhost: '/',
      name: 'limits',
      pattern: '^jobs$',
      'apply-to': 'queues',
      definition: { 'max-length': 10, 'dead-letter-exchange': 'dlx' },
      priority: 3,
    };
    const topology = await loadDefinitions({
      policies: [policy, { name: 'all', pattern: '.*', definition: { expires: 1 } }],
    });
    expect(topology.policies).toEqual([
      {
        name: 'limits',
        pattern: '^jobs$',
        applyTo: 'queues',
        priority: 3,
        definition: { 'max-length': 10, 'dead-letter-exchange': 'dlx' },
      },
      { name: 'all', pattern: '.*', applyTo: 'all', priority: 0, definition: { expires: 1 } },
    ]);
    const bad = (change: Record<string, unknown>) =>
      loadDefinitions({ policies: [{ ...policy, ...change }] });
    await expect(bad({ 'apply-to': 'streams' })).rejects.toThrow(
      `definitions: policy 'limits': field 'apply-to' must be 'queues', 'exchanges' or 'all', got "streams"`,
    );
    await expect(bad({ pattern: '(' })).rejects.toThrow(InvalidConfigError);
    await expect(bad({ priority: 1.5 })).rejects.toThrow(
      "definitions: policy 'limits': field 'priority' must be an integer, got 1.5",
    );
    await expect(bad({ definition: {} })).rejects.toThrow("field 'definition' is empty");
  });

  it('sets the policies of a file, and exports them as it read them', async () => {
    const policy = {
      vhost: '/',
      name: 'limits',
      pattern: '^jobs$',
      'apply-to': 'queues',
      definition: { 'max-length': 2 },
      priority: 3,
    };
    const broker = await Broker.open({
      definitions: { queues: [{ name: 'jobs', durable: true }], policies: [policy] } as never,
    });
    try {
      expect(broker.policies()).toEqual([policy]);
      const jobs = await broker.queue('jobs', { passive: true });
      for (const body of ['a', 'b', 'c']) await jobs.publish(body);
      expect((await jobs.get())?.bodyString()).toBe('b');
      expect(broker.exportDefinitions().policies).toEqual([policy]);
    } finally {
      await broker.close();
    }
    await expect(
      Broker.open({
        definitions: { policies: [{ ...policy, definition: { 'max-lenght': 1 } }] } as never,
      }),
    ).rejects.toThrow("definitions: policy 'limits'");
  });

  it('names the file, the entry and the field of a malformed entry', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ queues: [{ name: 'q', durable: 'yes' }] }));
    await expect(Broker.open({ definitions: file })).rejects.toThrow(
      new InvalidConfigError(
        `definitions ${file}: queue 'q': field 'durable' must be a boolean, got "yes"`,
      ),
    );
    await expect(Broker.open({ definitions: { queus: [] } as never })).rejects.toThrow(
      "definitions: unknown field 'queus'",
    );
    await expect(Broker.open({ definitions: { queues: {} } as never })).rejects.toThrow(
      "definitions: 'queues' must be an array",
    );
  });
});
