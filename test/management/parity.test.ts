/**
 * The management API of mqlite and of RabbitMQ's plugin, side by side: the same AMQP actions,
 * then the same HTTP requests, comparing status codes and the fields clients read. The RabbitMQ
 * side needs `rabbitmq-plugins enable rabbitmq_management rabbitmq_prometheus` (CI enables them).
 */
import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import {
  type Answer,
  api,
  eventually,
  managedBroker,
  RABBIT_AMQP,
  RABBIT_API,
  rabbitManagementUp,
} from './served.js';

const managed = managedBroker();
const rabbitUp = await rabbitManagementUp();
const RABBIT_PROMETHEUS = process.env.RABBITMQ_PROMETHEUS_URL ?? 'http://127.0.0.1:15692';

interface Target {
  readonly name: string;
  readonly amqp: () => string;
  readonly http: () => string;
  readonly metrics: () => string;
}

const targets: Target[] = [
  {
    name: 'mqlite',
    amqp: () => managed.server.url,
    http: () => managed.server.managementUrl!,
    metrics: () => managed.server.managementUrl!,
  },
  {
    name: 'rabbitmq',
    amqp: () => RABBIT_AMQP,
    http: () => RABBIT_API,
    metrics: () => RABBIT_PROMETHEUS,
  },
];

/** The fields of a queue that clients read. */
const QUEUE_FIELDS = [
  'name',
  'vhost',
  'durable',
  'auto_delete',
  'exclusive',
  'arguments',
  'type',
  'policy',
  'messages',
  'messages_ready',
  'messages_unacknowledged',
  'consumers',
  'state',
] as const;

const pick = (value: Record<string, unknown>, keys: readonly string[]) =>
  Object.fromEntries(keys.map((k) => [k, value[k]]));

describe.each(targets)('management API parity: $name', (target) => {
  const skip = target.name === 'rabbitmq' && !rabbitUp;
  const prefix = `mgmt-${randomBytes(4).toString('hex')}`;
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    api(target.http(), method, path, body, headers);
  /** Polls until the queue's statistics show `messages` (RabbitMQ's lag a few seconds). */
  const queueWith = async (queue: string, messages: number): Promise<Answer> => {
    let answer: Answer | undefined;
    await eventually(async () => {
      answer = await call('GET', `/api/queues/%2F/${queue}`);
      return (
        answer.status === 200 &&
        answer.json.messages === messages &&
        answer.json.consumers !== undefined
      );
    });
    return answer!;
  };

  /** Runs `body` on a new connection, then deletes `queue` and closes the connection. */
  const withQueue = async (queue: string, body: (c: amqplib.ChannelModel) => Promise<void>) => {
    const connection = await amqplib.connect(target.amqp());
    try {
      await body(connection);
    } finally {
      await call('DELETE', `/api/queues/%2F/${queue}`);
      await connection.close();
    }
  };

  it.skipIf(skip)('shows a queue after AMQP publishes, peeks with requeue and purges', async () => {
    if (skip) return;
    const queue = `${prefix}-jobs`;
    await withQueue(queue, async (connection) => {
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue(queue, { durable: false, arguments: { 'x-max-length': 100 } });
      for (let i = 0; i < 3; i++) {
        channel.sendToQueue(queue, Buffer.from(`job ${i}`), { messageId: `m${i}`, priority: 1 });
      }
      await channel.waitForConfirms();
      const shown = await queueWith(queue, 3);
      expect(pick(shown.json, QUEUE_FIELDS)).toEqual({
        name: queue,
        vhost: '/',
        durable: false,
        auto_delete: false,
        exclusive: false,
        arguments: { 'x-max-length': 100 },
        type: 'classic',
        policy: null,
        messages: 3,
        messages_ready: 3,
        messages_unacknowledged: 0,
        consumers: 0,
        state: 'running',
      });
      const got = await call('POST', `/api/queues/%2F/${queue}/get`, {
        count: 2,
        ackmode: 'ack_requeue_true',
        encoding: 'auto',
        truncate: 50000,
      });
      expect(got.status).toBe(200);
      expect(got.json).toEqual([
        {
          payload_bytes: 5,
          redelivered: false,
          exchange: '',
          routing_key: queue,
          message_count: 2,
          properties: { headers: {}, message_id: 'm0', priority: 1 },
          payload: 'job 0',
          payload_encoding: 'string',
        },
        expect.objectContaining({ payload: 'job 1', message_count: 1 }),
      ]);
      await queueWith(queue, 3);
      expect((await call('DELETE', `/api/queues/%2F/${queue}/contents`)).status).toBe(204);
      await queueWith(queue, 0);
    });
  });

  it.skipIf(skip)("counts a queue's publishes, gets, redeliveries and acks", async () => {
    if (skip) return;
    const queue = `${prefix}-counted`;
    await withQueue(queue, async (connection) => {
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue(queue, { durable: false });
      channel.sendToQueue(queue, Buffer.from('a'));
      channel.sendToQueue(queue, Buffer.from('b'));
      await channel.waitForConfirms();
      const get = async () => (await channel.get(queue)) as amqplib.GetMessage;
      const first = await get();
      const second = await get();
      channel.nack(first, false, true);
      const again = await get();
      channel.ack(second);
      channel.ack(again);
      const fields = ['publish', 'get', 'get_no_ack', 'deliver_get', 'redeliver', 'ack'];
      let stats: Record<string, unknown> = {};
      await eventually(async () => {
        stats = (await call('GET', `/api/queues/%2F/${queue}`)).json.message_stats ?? {};
        return stats.ack === 2 && stats.publish === 2;
      });
      expect(pick(stats, fields)).toEqual({
        publish: 2,
        get: 3,
        get_no_ack: 0,
        deliver_get: 3,
        redeliver: 1,
        ack: 2,
      });
    });
  });

  it.skipIf(skip)('counts a queue deleted over AMQP and declared again from 0', async () => {
    if (skip) return;
    const queue = `${prefix}-recounted`;
    await withQueue(queue, async (connection) => {
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue(queue, { durable: false });
      channel.sendToQueue(queue, Buffer.from('a'));
      await channel.waitForConfirms();
      await eventually(
        async () =>
          (await call('GET', `/api/queues/%2F/${queue}`)).json.message_stats?.publish === 1,
      );
      await channel.deleteQueue(queue);
      await eventually(async () => (await call('GET', `/api/queues/%2F/${queue}`)).status === 404);
      await channel.assertQueue(queue, { durable: false });
      const shown = await queueWith(queue, 0);
      expect(shown.json.message_stats?.publish ?? 0).toBe(0);
    });
  });

  it.skipIf(skip)(
    'answers declares, deletes, binds and publishes with the same codes',
    async () => {
      if (skip) return;
      const queue = `${prefix}-codes`;
      const exchange = `${prefix}-x`;
      try {
        expect((await call('PUT', `/api/queues/%2F/${queue}`, { durable: false })).status).toBe(
          201,
        );
        expect((await call('PUT', `/api/queues/%2F/${queue}`, { durable: false })).status).toBe(
          204,
        );
        const x = await call('PUT', `/api/exchanges/%2F/${exchange}`, {
          type: 'topic',
          durable: false,
        });
        expect(x.status).toBe(201);
        const bound = await call('POST', `/api/bindings/%2F/e/${exchange}/q/${queue}`, {
          routing_key: 'a.*',
        });
        expect(bound.status).toBe(201);
        expect(bound.headers.get('location')).toBe(`${queue}/a.%252A`);
        const listed = await call('GET', `/api/bindings/%2F/e/${exchange}/q/${queue}`);
        expect(
          listed.json.map((b: Record<string, unknown>) =>
            pick(b, [
              'source',
              'destination',
              'destination_type',
              'routing_key',
              'arguments',
              'properties_key',
            ]),
          ),
        ).toEqual([
          {
            source: exchange,
            destination: queue,
            destination_type: 'queue',
            routing_key: 'a.*',
            arguments: {},
            properties_key: 'a.%2A',
          },
        ]);
        const publish = (routing_key: string) =>
          call('POST', `/api/exchanges/%2F/${exchange}/publish`, {
            properties: {},
            routing_key,
            payload: 'p',
            payload_encoding: 'string',
          });
        expect((await publish('a.b')).json).toEqual({ routed: true });
        expect((await publish('b.b')).json).toEqual({ routed: false });
        await queueWith(queue, 1);
        expect((await call('DELETE', `/api/queues/%2F/${queue}?if-empty=true`)).status).toBe(400);
        const unbound = await call('DELETE', `/api/bindings/%2F/e/${exchange}/q/${queue}/a.%252A`);
        expect(unbound.status).toBe(204);
        expect((await call('GET', `/api/queues/%2F/${prefix}-missing`)).status).toBe(404);
        expect((await call('GET', `/api/queues/%2F/${prefix}-missing`)).json).toEqual({
          error: 'Object Not Found',
          reason: 'Not Found',
        });
        expect((await call('DELETE', `/api/queues/%2F/${prefix}-missing`)).status).toBe(404);
        expect((await call('GET', '/api/nothing-here')).status).toBe(404);
        const notJson = await call('PUT', `/api/queues/%2F/${queue}`, '{bad');
        expect([notJson.status, notJson.json]).toEqual([
          400,
          { error: 'bad_request', reason: 'not_json' },
        ]);
        const wrongMethod = await call('PATCH', '/api/overview');
        expect([wrongMethod.status, wrongMethod.headers.get('allow')]).toEqual([
          405,
          'HEAD, GET, OPTIONS',
        ]);
        const bare = await fetch(`${target.http()}/api/overview`);
        expect([bare.status, bare.headers.get('www-authenticate')]).toEqual([
          401,
          'Basic realm="RabbitMQ Management"',
        ]);
      } finally {
        await call('DELETE', `/api/queues/%2F/${queue}`);
        await call('DELETE', `/api/exchanges/%2F/${exchange}`);
      }
    },
  );

  it.skipIf(skip)(
    'adds a user, grants it a vhost, refuses it once cleared and closes its connection on delete',
    async () => {
      if (skip) return;
      const user = `${prefix}-user`;
      const url = target.amqp().replace('guest:guest@', `${user}:secret@`);
      try {
        expect(
          (await call('PUT', `/api/users/${user}`, { password: 'secret', tags: '' })).status,
        ).toBe(201);
        expect(
          (await call('PUT', `/api/users/${user}`, { password: 'secret', tags: 'management' }))
            .status,
        ).toBe(204);
        expect((await call('GET', `/api/users/${user}`)).json).toEqual({
          name: user,
          password_hash: expect.stringMatching(/^[A-Za-z0-9+/]{48}$/),
          hashing_algorithm: 'rabbit_password_hashing_sha256',
          tags: ['management'],
          limits: {},
        });
        const grant = { configure: '.*', write: '.*', read: '.*' };
        expect((await call('PUT', `/api/permissions/%2F/${user}`, grant)).status).toBe(201);
        expect((await call('PUT', `/api/permissions/%2F/${user}`, grant)).status).toBe(204);
        expect((await call('GET', `/api/permissions/%2F/${user}`)).json).toEqual({
          user,
          vhost: '/',
          ...grant,
        });
        const connection = await amqplib.connect(url);
        connection.on('error', () => {});
        const closed = new Promise<Error>((resolve) => connection.on('close', resolve));
        expect((await call('DELETE', `/api/permissions/%2F/${user}`)).status).toBe(204);
        expect((await call('DELETE', `/api/permissions/%2F/${user}`)).status).toBe(404);
        const channel = await connection.createChannel();
        channel.on('error', () => {});
        await expect(channel.assertQueue(`${prefix}-refused`, { durable: false })).rejects.toThrow(
          `403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - access to queue '${prefix}-refused' in vhost '/' refused for user '${user}'"`,
        );
        expect((await call('DELETE', `/api/users/${user}`)).status).toBe(204);
        expect((await closed).message).toContain(
          `320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - user '${user}' is deleted"`,
        );
        expect((await call('GET', `/api/users/${user}`)).status).toBe(404);
        expect((await call('DELETE', `/api/users/${user}`)).status).toBe(404);
      } finally {
        await call('DELETE', `/api/users/${user}`);
      }
    },
  );

  it.skipIf(skip)("refuses malformed users and permissions in RabbitMQ's words", async () => {
    if (skip) return;
    const user = `${prefix}-checked`;
    const reason = async (method: string, path: string, body: unknown) => {
      const answer = await call(method, path, body);
      return [answer.status, answer.json?.reason];
    };
    try {
      expect(await reason('PUT', `/api/users/${user}`, { password: 'x' })).toEqual([
        400,
        'tags_not_present',
      ]);
      expect(
        await reason('PUT', `/api/users/${user}`, {
          password: 'x',
          password_hash: 'abcd',
          tags: '',
        }),
      ).toEqual([400, 'both_password_and_password_hash_are_provided']);
      expect(await reason('PUT', `/api/users/${user}`, { password_hash: 'abc', tags: '' })).toEqual(
        [400, ['not_base64', 'abc']],
      );
      expect(await reason('PUT', `/api/users/${user}`, 'not json')).toEqual([400, 'not_json']);
      expect(
        await reason('PUT', `/api/permissions/%2F/${user}`, {
          configure: '.*',
          write: '.*',
          read: '.*',
        }),
      ).toEqual([400, 'vhost_or_user_not_found']);
      const hash = Buffer.alloc(68, 7).toString('base64');
      expect(
        (
          await call('PUT', `/api/users/${user}`, {
            password_hash: hash,
            hashing_algorithm: 'rabbit_password_hashing_sha512',
            tags: ['monitoring', 'policymaker'],
          })
        ).status,
      ).toBe(201);
      expect((await call('GET', `/api/users/${user}`)).json).toMatchObject({
        password_hash: hash,
        hashing_algorithm: 'rabbit_password_hashing_sha512',
        tags: ['monitoring', 'policymaker'],
      });
      expect(
        await reason('PUT', `/api/permissions/%2F/${user}`, { write: '.*', read: '.*' }),
      ).toEqual([400, '[{key_missing,configure}]']);
      expect(await reason('POST', '/api/users/bulk-delete', {})).toEqual([
        400,
        '[{key_missing,users}]',
      ]);
      expect((await call('GET', '/api/users/bulk-delete')).status).toBe(405);
      expect(
        await reason('POST', '/api/users/bulk-delete', { users: [user, `${user}-missing`] }),
      ).toEqual([400, ['no_such_user', `${user}-missing`]]);
      expect((await call('GET', `/api/users/${user}`)).status).toBe(404);
      expect((await call('POST', '/api/users/bulk-delete', { users: [] })).status).toBe(204);
    } finally {
      await call('DELETE', `/api/users/${user}`);
    }
  });

  it.skipIf(skip)('answers whoami, health checks and the aliveness test alike', async () => {
    if (skip) return;
    expect((await call('GET', '/api/whoami')).json).toEqual({
      name: 'guest',
      tags: ['administrator'],
    });
    expect((await call('GET', '/api/health/checks/alarms')).json).toEqual({ status: 'ok' });
    expect((await call('GET', '/api/health/checks/local-alarms')).json).toEqual({ status: 'ok' });
    expect((await call('GET', '/api/aliveness-test/%2F')).json).toEqual({ status: 'ok' });
    const overview = (await call('GET', '/api/overview')).json;
    expect(Object.keys(overview)).toEqual(
      expect.arrayContaining([
        'management_version',
        'node',
        'message_stats',
        'queue_totals',
        'object_totals',
        'listeners',
      ]),
    );
    expect(overview.queue_totals).toEqual({
      messages: expect.any(Number),
      messages_details: { rate: expect.any(Number) },
      messages_ready: expect.any(Number),
      messages_ready_details: { rate: expect.any(Number) },
      messages_unacknowledged: expect.any(Number),
      messages_unacknowledged_details: { rate: expect.any(Number) },
    });
  });

  it.skipIf(skip)('closes a connection by name with 320 and the X-Reason', async () => {
    if (skip) return;
    const name = `${prefix}-conn`;
    const connection = await amqplib.connect(target.amqp(), {
      clientProperties: { connection_name: name },
    });
    const closed = new Promise<Error>((resolve) => connection.on('close', resolve));
    let listed: { name: string } | undefined;
    await eventually(async () => {
      const all = (await call('GET', '/api/connections')).json as {
        name: string;
        user_provided_name?: string;
      }[];
      listed = all.find((c) => c.user_provided_name === name);
      return listed !== undefined;
    });
    const answer = await call(
      'DELETE',
      `/api/connections/${encodeURIComponent(listed!.name)}`,
      undefined,
      {
        'x-reason': 'parity check',
      },
    );
    expect(answer.status).toBe(204);
    expect((await closed).message).toContain(
      '320 (CONNECTION-FORCED) with message "CONNECTION_FORCED - parity check"',
    );
  });

  it.skipIf(skip)(
    'serves /metrics with the Prometheus plugin’s names, types and help',
    async () => {
      if (skip) return;
      const text = await (await fetch(`${target.metrics()}/metrics`)).text();
      const declared = new Map<string, string>();
      for (const line of text.split('\n')) {
        const match = /^# (TYPE|HELP) (\S+) (.*)$/.exec(line);
        if (match) declared.set(`${match[1]} ${match[2]}`, match[3]!);
      }
      for (const name of [
        'rabbitmq_queue_messages_ready',
        'rabbitmq_queue_messages_unacked',
        'rabbitmq_queue_messages',
        'rabbitmq_queue_consumers',
        'rabbitmq_connections',
        'rabbitmq_channels',
        'rabbitmq_queues',
        'rabbitmq_queue_messages_published_total',
        'rabbitmq_global_messages_received_total',
        'rabbitmq_global_messages_delivered_total',
        'rabbitmq_global_messages_acknowledged_total',
      ]) {
        expect(declared.get(`TYPE ${name}`), name).toBe(
          name.endsWith('_total') ? 'counter' : 'gauge',
        );
        expect(declared.get(`HELP ${name}`), name).toBe(EXPECTED_HELP[name]);
      }
    },
  );

  it.skipIf(skip)('serves /metrics/detailed with the families and vhosts asked for', async () => {
    if (skip) return;
    const queue = `${prefix}-detailed`;
    await withQueue(queue, async (connection) => {
      const channel = await connection.createConfirmChannel();
      await channel.assertQueue(queue, { durable: false });
      await channel.bindQueue(queue, 'amq.topic', `${prefix}.#`);
      channel.sendToQueue(queue, Buffer.from('a'));
      channel.sendToQueue(queue, Buffer.from('b'));
      await channel.waitForConfirms();
      const scrape = async (query: string) =>
        (await fetch(`${target.metrics()}/metrics/detailed${query}`)).text();
      const sample = `rabbitmq_detailed_queue_messages_ready{vhost="/",queue="${queue}"} 2`;
      let text = '';
      await eventually(async () => {
        text = await scrape('?family=queue_coarse_metrics&family=exchange_bindings&vhost=%2F');
        return text.includes(sample);
      });
      for (const [name, help] of [
        ['rabbitmq_detailed_queue_messages_ready', 'Messages ready to be delivered to consumers'],
        [
          'rabbitmq_detailed_queue_messages',
          'Sum of ready and unacknowledged messages - total queue depth',
        ],
        [
          'rabbitmq_cluster_exchange_bindings',
          'Number of bindings for an exchange. This value is cluster-wide.',
        ],
      ]) {
        expect(text).toContain(`# TYPE ${name} gauge\n# HELP ${name} ${help}\n`);
      }
      expect(text).toContain(`rabbitmq_detailed_queue_messages{vhost="/",queue="${queue}"} 2`);
      expect(text).toMatch(
        /rabbitmq_cluster_exchange_bindings\{vhost="\/",exchange="amq.topic",type="topic"\} [1-9]/,
      );
      expect(text).not.toContain('rabbitmq_detailed_queue_consumers');
      expect(await scrape('')).not.toContain('rabbitmq_detailed_');
      expect(await scrape('?family=queue_consumer_count&vhost=no-such-vhost')).not.toContain(
        `queue="${queue}"`,
      );
      expect(await scrape('?family=queue_consumer_count')).toContain(
        `rabbitmq_detailed_queue_consumers{vhost="/",queue="${queue}"} 0`,
      );
    });
  });
});

/** The help of the rabbitmq_prometheus plugin of RabbitMQ 3.10. */
const EXPECTED_HELP: Readonly<Record<string, string>> = {
  rabbitmq_queue_messages_ready: 'Messages ready to be delivered to consumers',
  rabbitmq_queue_messages_unacked: 'Messages delivered to consumers but not yet acknowledged',
  rabbitmq_queue_messages: 'Sum of ready and unacknowledged messages - total queue depth',
  rabbitmq_queue_consumers: 'Consumers on a queue',
  rabbitmq_connections: 'Connections currently open',
  rabbitmq_channels: 'Channels currently open',
  rabbitmq_queues: 'Queues available',
  rabbitmq_queue_messages_published_total: 'Total number of messages published to queues',
  rabbitmq_global_messages_received_total: 'Total number of messages received from publishers',
  rabbitmq_global_messages_delivered_total: 'Total number of messages delivered to consumers',
  rabbitmq_global_messages_acknowledged_total: 'Total number of messages acknowledged by consumers',
};

describe('the RabbitMQ side', () => {
  it.skipIf(rabbitUp)('is skipped: RabbitMQ management does not answer at RABBIT_API', () => {
    // Enable it with `rabbitmq-plugins enable rabbitmq_management rabbitmq_prometheus`.
    expect(rabbitUp).toBe(false);
  });
});
