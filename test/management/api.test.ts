/**
 * The management API of a served broker: what an operator, a test helper or rabbitmqadmin reads
 * and does over HTTP, after AMQP clients did their work.
 */
import { createHash } from 'node:crypto';
import amqplib from 'amqplib';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { hashPassword } from '../../src/server/auth.js';
import { listen, Users } from '../../src/server/index.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { api, basic, eventually, managedBroker } from './served.js';

const managed = managedBroker();
const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  api(managed.server.managementUrl!, method, path, body, headers);

describe('queues over HTTP', () => {
  it('declares a queue with PUT (201, then 204), shows its depth and deletes it', async () => {
    expect((await call('PUT', '/api/queues/%2F/api-q', { durable: false })).status).toBe(201);
    expect((await call('PUT', '/api/queues/%2F/api-q', { durable: false })).status).toBe(204);
    await managed.broker.publish('', 'one', { routingKey: 'api-q' });
    const queue = await call('GET', '/api/queues/%2F/api-q');
    expect(queue.status).toBe(200);
    expect(queue.json).toMatchObject({
      name: 'api-q',
      vhost: '/',
      durable: false,
      type: 'classic',
      messages: 1,
      messages_ready: 1,
      messages_unacknowledged: 0,
      consumers: 0,
      arguments: {},
      policy: null,
      state: 'running',
    });
    const listed = await call('GET', '/api/queues/%2F');
    expect(listed.json.map((q: { name: string }) => q.name)).toContain('api-q');
    expect((await call('DELETE', '/api/queues/%2F/api-q?if-empty=true')).status).toBe(400);
    expect((await call('DELETE', '/api/queues/%2F/api-q')).status).toBe(204);
    expect((await call('GET', '/api/queues/%2F/api-q')).status).toBe(404);
    expect((await call('DELETE', '/api/queues/%2F/api-q')).status).toBe(404);
  });

  it('purges with DELETE .../contents', async () => {
    await managed.broker.queue('purged', { durable: false });
    for (let i = 0; i < 3; i++) await managed.broker.publish('', `m${i}`, { routingKey: 'purged' });
    expect((await call('DELETE', '/api/queues/%2F/purged/contents')).status).toBe(204);
    expect((await call('GET', '/api/queues/%2F/purged')).json.messages).toBe(0);
    expect((await call('DELETE', '/api/queues/%2F/missing/contents')).status).toBe(404);
  });

  it('gets messages with each ackmode: requeued ones stay, the others go', async () => {
    await managed.broker.queue('got', { durable: false });
    for (let i = 0; i < 3; i++) {
      await managed.broker.publish('', `m${i}`, { routingKey: 'got', messageId: `id${i}` });
    }
    const peek = await call('POST', '/api/queues/%2F/got/get', {
      count: 2,
      ackmode: 'ack_requeue_true',
      encoding: 'auto',
    });
    expect(peek.status).toBe(200);
    expect(peek.json).toEqual([
      expect.objectContaining({
        payload: 'm0',
        payload_encoding: 'string',
        payload_bytes: 2,
        redelivered: false,
        exchange: '',
        routing_key: 'got',
        message_count: 2,
        properties: { message_id: 'id0' },
      }),
      expect.objectContaining({ payload: 'm1', message_count: 1 }),
    ]);
    expect((await call('GET', '/api/queues/%2F/got')).json.messages).toBe(3);
    const taken = await call('POST', '/api/queues/%2F/got/get', {
      count: 1,
      ackmode: 'ack_requeue_false',
      encoding: 'base64',
      truncate: 1,
    });
    expect(taken.json[0]).toMatchObject({
      payload: Buffer.from('m').toString('base64'),
      payload_encoding: 'base64',
      payload_bytes: 2,
      redelivered: true,
    });
    expect((await call('GET', '/api/queues/%2F/got')).json.messages).toBe(2);
    await call('POST', '/api/queues/%2F/got/get', { count: 5, ackmode: 'reject_requeue_false' });
    expect((await call('GET', '/api/queues/%2F/got')).json.messages).toBe(0);
    const bad = await call('POST', '/api/queues/%2F/got/get', { count: 1, ackmode: 'peek' });
    expect(bad.status).toBe(400);
  });
});

describe('exchanges and bindings over HTTP', () => {
  it('declares an exchange, binds a queue, publishes (routed) and unbinds by properties key', async () => {
    expect((await call('PUT', '/api/exchanges/%2F/api-x', { type: 'direct' })).status).toBe(201);
    expect((await call('GET', '/api/exchanges/%2F/api-x')).json).toMatchObject({
      name: 'api-x',
      type: 'direct',
      durable: true,
      auto_delete: false,
      internal: false,
    });
    await call('PUT', '/api/queues/%2F/api-bound', { durable: false });
    const created = await call('POST', '/api/bindings/%2F/e/api-x/q/api-bound', {
      routing_key: 'k',
      arguments: {},
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('api-bound/k');
    const bindings = await call('GET', '/api/queues/%2F/api-bound/bindings');
    expect(bindings.json).toEqual([
      expect.objectContaining({
        source: '',
        routing_key: 'api-bound',
        properties_key: 'api-bound',
      }),
      expect.objectContaining({ source: 'api-x', destination: 'api-bound', routing_key: 'k' }),
    ]);
    const publish = (routing_key: string) =>
      call('POST', '/api/exchanges/%2F/api-x/publish', {
        properties: { content_type: 'text/plain' },
        routing_key,
        payload: 'hello',
        payload_encoding: 'string',
      });
    expect((await publish('k')).json).toEqual({ routed: true });
    expect((await publish('other')).json).toEqual({ routed: false });
    expect((await call('GET', '/api/queues/%2F/api-bound')).json.messages).toBe(1);
    expect((await call('DELETE', '/api/bindings/%2F/e/api-x/q/api-bound/k')).status).toBe(204);
    expect((await publish('k')).json).toEqual({ routed: false });
    expect((await call('DELETE', '/api/exchanges/%2F/api-x')).status).toBe(204);
    expect((await call('GET', '/api/exchanges/%2F/api-x')).status).toBe(404);
  });

  it('names the default exchange amq.default in paths', async () => {
    const exchange = await call('GET', '/api/exchanges/%2F/amq.default');
    expect(exchange.json).toMatchObject({ name: '', type: 'direct' });
  });
});

describe('depth rates', () => {
  it("reports the change per second of a queue's and the node's depths over 5 s", async () => {
    const clock = new ManualClock();
    await using broker = await Broker.open({ clock });
    await using server = await listen(broker, { clock, management: { port: 0 } });
    const get = async (path: string) => (await api(server.managementUrl!, 'GET', path)).json;
    await broker.queue('deepening', { durable: false });
    await broker.publish('', 'first', { routingKey: 'deepening' });
    const first = await get('/api/queues/%2F/deepening');
    expect(first.messages_details).toEqual({ rate: 0 });
    expect((await get('/api/overview')).queue_totals.messages_details).toEqual({ rate: 0 });
    for (let i = 0; i < 10; i++) await broker.publish('', `m${i}`, { routingKey: 'deepening' });
    clock.advance(4_000);
    // Within the sample interval the last rate stands.
    expect((await get('/api/queues/%2F/deepening')).messages_details).toEqual({ rate: 0 });
    clock.advance(1_000);
    const queue = await get('/api/queues/%2F/deepening');
    expect(queue).toMatchObject({
      messages: 11,
      messages_details: { rate: 2 },
      messages_ready_details: { rate: 2 },
      messages_unacknowledged_details: { rate: 0 },
    });
    expect((await get('/api/overview')).queue_totals).toMatchObject({
      messages: 11,
      messages_details: { rate: 2 },
      messages_ready_details: { rate: 2 },
    });
    await (await broker.queue('deepening', { passive: true })).purge();
    clock.advance(5_000);
    expect((await get('/api/queues/%2F/deepening')).messages_details).toEqual({ rate: -2.2 });
  });
});

describe('connections, channels and consumers over HTTP', () => {
  it('lists a client connection, its channel and consumer, and counts their messages', async () => {
    const before = (await call('GET', '/api/overview')).json.message_stats;
    const connection = await amqplib.connect(managed.server.url, {
      clientProperties: { connection_name: 'worker-1' },
    });
    const channel = await connection.createChannel();
    await channel.assertQueue('consumed', { durable: false });
    await channel.prefetch(7);
    channel.sendToQueue('consumed', Buffer.from('x'));
    const seen = new Promise<amqplib.ConsumeMessage>((resolve) => {
      void channel.consume('consumed', (m) => m && resolve(m), { consumerTag: 'ctag-1' });
    });
    channel.ack(await seen);
    await eventually(
      async () => (await call('GET', '/api/overview')).json.message_stats.ack === before.ack + 1,
    );
    const connections = (await call('GET', '/api/connections')).json;
    expect(connections).toEqual([
      expect.objectContaining({
        user: 'guest',
        vhost: '/',
        state: 'running',
        channels: 1,
        protocol: 'AMQP 0-9-1',
        user_provided_name: 'worker-1',
        node: expect.any(String),
      }),
    ]);
    const consumers = (await call('GET', '/api/consumers/%2F')).json;
    expect(consumers).toEqual([
      expect.objectContaining({
        consumer_tag: 'ctag-1',
        queue: { name: 'consumed', vhost: '/' },
        ack_required: true,
        prefetch_count: 7,
      }),
    ]);
    const channels = (await call('GET', '/api/channels')).json;
    expect(channels[0]).toMatchObject({ number: 1, consumer_count: 1, prefetch_count: 7 });
    const overview = (await call('GET', '/api/overview')).json;
    expect(overview.message_stats).toMatchObject({
      publish: before.publish + 1,
      deliver: before.deliver + 1,
      deliver_get: before.deliver_get + 1,
    });
    expect(overview.object_totals).toMatchObject({ connections: 1, channels: 1, consumers: 1 });
    const queue = (await call('GET', '/api/queues/%2F/consumed')).json;
    expect(queue.message_stats).toMatchObject({ deliver: 1, deliver_get: 1 });
    expect(queue.message_stats.deliver_get_details).toEqual({ rate: expect.any(Number) });
    await connection.close();
  });

  it("counts each queue's publishes, deliveries, acks and redeliveries", async () => {
    const connection = await amqplib.connect(managed.server.url);
    const channel = await connection.createChannel();
    await channel.assertExchange('stats-fanout', 'fanout', { durable: false });
    for (const name of ['stats-a', 'stats-b']) {
      await channel.assertQueue(name, { durable: false });
      await channel.bindQueue(name, 'stats-fanout', '');
    }
    channel.publish('stats-fanout', '', Buffer.from('1'));
    channel.publish('stats-fanout', '', Buffer.from('2'));
    await managed.broker.publish('', 'in process', { routingKey: 'stats-a' });
    await eventually(async () => (await channel.checkQueue('stats-a')).messageCount === 3);
    // stats-a: three gets, the second requeued and got again, then all three acked.
    const get = async () => (await channel.get('stats-a')) as amqplib.GetMessage;
    const [first, second, third] = [await get(), await get(), await get()];
    channel.ack(first);
    channel.nack(second, false, true);
    const again = await get();
    expect(again.fields.redelivered).toBe(true);
    channel.ack(third);
    channel.ack(again);
    // stats-b: two consumer deliveries, acked with one `multiple`.
    let delivered = 0;
    await channel.consume('stats-b', (m) => {
      if (m && ++delivered === 2) channel.ack(m, true);
    });
    const queue = async (name: string) =>
      (await call('GET', `/api/queues/%2F/${name}`)).json.message_stats;
    await eventually(
      async () => (await queue('stats-a')).ack === 3 && (await queue('stats-b')).ack === 2,
    );
    expect(await queue('stats-a')).toMatchObject({
      publish: 3,
      get: 4,
      deliver_get: 4,
      redeliver: 1,
      ack: 3,
      publish_details: { rate: expect.any(Number) },
      ack_details: { rate: expect.any(Number) },
    });
    expect(await queue('stats-b')).toMatchObject({
      publish: 2,
      deliver: 2,
      deliver_get: 2,
      ack: 2,
    });
    const metrics = await (
      await fetch(`${managed.server.managementUrl}/metrics/per-object`)
    ).text();
    expect(metrics).toContain(
      'rabbitmq_queue_messages_published_total{vhost="/",queue="stats-a"} 3',
    );
    await channel.deleteExchange('stats-fanout');
    await channel.deleteQueue('stats-a');
    await channel.deleteQueue('stats-b');
    await connection.close();
  });

  it('closes a connection with 320 CONNECTION_FORCED and the X-Reason as its reason', async () => {
    const connection = await amqplib.connect(managed.server.url);
    const closed = new Promise<Error>((resolve) => connection.on('close', resolve));
    const [listed] = (await call('GET', '/api/connections')).json;
    const name = encodeURIComponent(listed.name);
    expect((await call('GET', `/api/connections/${name}`)).json.name).toBe(listed.name);
    const answer = await call('DELETE', `/api/connections/${name}`, undefined, {
      'x-reason': 'testing reconnects',
    });
    expect(answer.status).toBe(204);
    const error = await closed;
    expect(error.message).toContain('CONNECTION_FORCED - testing reconnects');
    await eventually(async () => (await call('GET', '/api/connections')).json.length === 0);
  });
});

describe('the node over HTTP', () => {
  it('answers overview, whoami, vhosts, health checks and the aliveness test', async () => {
    expect((await call('GET', '/api/whoami')).json).toEqual({
      name: 'guest',
      tags: ['administrator'],
    });
    expect((await call('GET', '/api/vhosts')).json).toEqual([
      expect.objectContaining({ name: '/' }),
    ]);
    expect((await call('GET', '/api/health/checks/alarms')).json).toEqual({ status: 'ok' });
    expect((await call('GET', '/api/aliveness-test/%2F')).json).toEqual({ status: 'ok' });
    expect((await call('GET', '/api/aliveness-test/nowhere')).status).toBe(404);
    const port = managed.server.port;
    expect((await call('GET', `/api/health/checks/port-listener/${port}`)).status).toBe(200);
    expect((await call('GET', '/api/overview')).json).toMatchObject({
      management_version: expect.any(String),
      node: expect.any(String),
      listeners: [expect.objectContaining({ protocol: 'amqp', port })],
    });
  });

  it('sets, lists and clears a policy', async () => {
    const put = await call('PUT', '/api/policies/%2F/short', {
      pattern: '^short\\.',
      definition: { 'max-length': 2 },
      'apply-to': 'queues',
    });
    expect(put.status).toBe(201);
    expect((await call('GET', '/api/policies/%2F/short')).json).toMatchObject({
      name: 'short',
      pattern: '^short\\.',
      definition: { 'max-length': 2 },
    });
    await call('PUT', '/api/queues/%2F/short.q', { durable: false });
    expect((await call('GET', '/api/queues/%2F/short.q')).json.policy).toBe('short');
    expect((await call('DELETE', '/api/policies/%2F/short')).status).toBe(204);
    expect((await call('GET', '/api/policies/%2F/short')).status).toBe(404);
  });

  it('exports definitions and loads them back into another vhost', async () => {
    await call('PUT', '/api/queues/%2F/defined', { durable: true });
    const exported = await call('GET', '/api/definitions');
    expect(exported.json.queues).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'defined', vhost: '/' })]),
    );
    expect(exported.json.users).toEqual([expect.objectContaining({ name: 'guest' })]);
    const loaded = await call('POST', '/api/definitions', {
      queues: [{ name: 'imported', vhost: '/', durable: true, auto_delete: false, arguments: {} }],
    });
    expect(loaded.status).toBe(204);
    expect((await call('GET', '/api/queues/%2F/imported')).status).toBe(200);
  });
});

describe('users and permissions over HTTP', () => {
  it('logs in a user added with a sha512 hash once granted, and narrows its next operations', async () => {
    const salt = Buffer.from([9, 8, 7, 6]);
    const hash = Buffer.concat([
      salt,
      createHash('sha512').update(salt).update('s3cret').digest(),
    ]).toString('base64');
    expect(
      (
        await call('PUT', '/api/users/hashed', {
          password_hash: hash,
          hashing_algorithm: 'rabbit_password_hashing_sha512',
          tags: 'management',
        })
      ).status,
    ).toBe(201);
    const url = managed.server.url.replace('guest:guest@', 'hashed:s3cret@');
    await expect(amqplib.connect(url)).rejects.toThrow('ConnectionClose');
    const grant = { configure: '.*', write: '.*', read: '.*' };
    expect((await call('PUT', '/api/permissions/%2F/hashed', grant)).status).toBe(201);
    const connection = await amqplib.connect(url);
    const channel = await connection.createChannel();
    await channel.assertQueue('hashed-q', { durable: false });
    // The same channel's next declare is checked against the new patterns.
    await call('PUT', '/api/permissions/%2F/hashed', { ...grant, configure: '^own\\.' });
    await channel.assertQueue('own.q', { durable: false, autoDelete: true });
    const refused = new Promise<Error>((resolve) => channel.on('error', resolve));
    await expect(channel.assertQueue('other-q', { durable: false })).rejects.toThrow(
      "access to queue 'other-q' in vhost '/' refused for user 'hashed'",
    );
    await refused;
    const defs = (await call('GET', '/api/definitions')).json;
    expect(defs.users).toContainEqual({
      name: 'hashed',
      password_hash: hash,
      hashing_algorithm: 'rabbit_password_hashing_sha512',
      tags: ['management'],
      limits: {},
    });
    expect(defs.permissions).toContainEqual({
      user: 'hashed',
      vhost: '/',
      ...grant,
      configure: '^own\\.',
    });
    const closed = new Promise<Error>((resolve) => connection.on('close', resolve));
    connection.on('error', () => {});
    expect((await call('DELETE', '/api/users/hashed')).status).toBe(204);
    expect((await closed).message).toContain("user 'hashed' is deleted");
    expect((await call('GET', '/api/permissions/%2F/hashed')).status).toBe(404);
    await managed.broker.deleteQueue('hashed-q');
  });

  it('imports the users and permissions of posted definitions', async () => {
    const posted = await call('POST', '/api/definitions', {
      users: [{ name: 'imported-user', password_hash: hashPassword('pw'), tags: 'monitoring' }],
      permissions: [{ user: 'imported-user', vhost: '/', configure: '', write: '.*', read: '.*' }],
    });
    expect(posted.status).toBe(204);
    expect((await call('GET', '/api/users/imported-user')).json.tags).toEqual(['monitoring']);
    const connection = await amqplib.connect(
      managed.server.url.replace('guest:guest@', 'imported-user:pw@'),
    );
    await connection.close();
    expect(
      (await call('POST', '/api/definitions', { permissions: [{ user: 'nobody', vhost: '/' }] }))
        .json,
    ).toEqual({ error: 'bad_request', reason: 'vhost_or_user_not_found' });
    expect(
      (await call('POST', '/api/users/bulk-delete', { users: ['imported-user'] })).status,
    ).toBe(204);
  });
});

describe('who may use the API', () => {
  it('answers 401 without credentials, with wrong ones, and to a user without management tags', async () => {
    const bare = await fetch(`${managed.server.managementUrl}/api/overview`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Basic realm="RabbitMQ Management"');
    const wrong = await call('GET', '/api/overview', undefined, {
      authorization: basic('guest', 'nope'),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.json).toEqual({ error: 'not_authorised', reason: 'Login failed' });
  });

  it('applies the tags: monitoring reads everything but the users, plain users are refused', async () => {
    const hash = hashPassword;
    const users = Users.fromDefinitions({
      users: [
        { name: 'admin', password_hash: hash('a'), tags: 'administrator' },
        { name: 'watcher', password_hash: hash('w'), tags: ['monitoring'] },
        { name: 'app', password_hash: hash('p'), tags: '' },
      ],
      vhosts: [{ name: '/' }],
      permissions: [{ user: 'app', vhost: '/', configure: '.*', write: '.*', read: '.*' }],
    });
    await using broker = await Broker.open();
    await using server = await listen(broker, { users, management: { port: 0 } });
    const as = (user: string, password: string, path: string) =>
      api(server.managementUrl!, 'GET', path, undefined, { authorization: basic(user, password) });
    expect((await as('admin', 'a', '/api/users')).status).toBe(200);
    expect((await as('watcher', 'w', '/api/overview')).status).toBe(200);
    const refused = await as('watcher', 'w', '/api/users');
    expect(refused.status).toBe(401);
    expect(refused.json).toEqual({ error: 'not_authorised', reason: 'Not administrator user' });
    expect((await as('app', 'p', '/api/overview')).json).toEqual({
      error: 'not_authorised',
      reason: 'Not management user',
    });
  });
});
