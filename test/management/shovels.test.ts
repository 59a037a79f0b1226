/**
 * Shovels over the management API, on mqlite and on RabbitMQ 3.10 with its shovel management
 * plugin side by side: the same requests, compared field by field. The RabbitMQ side needs
 * `rabbitmq-plugins enable rabbitmq_shovel rabbitmq_shovel_management`. A running shovel's state
 * on mqlite carries what RabbitMQ 4.x adds to 3.10's (its counts and `blocked_status`); those
 * fields are named here, and every field 3.10 has is compared.
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

const targets = [
  { name: 'mqlite', amqp: () => managed.server.url, http: () => managed.server.managementUrl! },
  { name: 'rabbitmq', amqp: () => RABBIT_AMQP, http: () => RABBIT_API },
];

describe.each(targets)('shovels over the management API: $name', (target) => {
  const skip = target.name === 'rabbitmq' && !rabbitUp;
  const prefix = `shovel-${randomBytes(4).toString('hex')}`;
  const call = (method: string, path: string, body?: unknown) =>
    api(target.http(), method, path, body);
  const hostOf = (uri: string) => uri.replace(/^amqp:\/\/[^@]*@/, 'amqp://');
  /**
   * A running shovel's state as this target writes it: 3.10's fields, and on mqlite those RabbitMQ
   * 4.x adds (`added`: its counts, before `state`; `blocked_status`, last).
   */
  const asRunning = (
    fields: Record<string, unknown>,
    added: Record<string, unknown>,
    blockedStatus: string,
  ): Record<string, unknown> => {
    if (target.name !== 'mqlite') return fields;
    const { node, timestamp, name, vhost, type, ...rest } = fields;
    return { node, timestamp, name, vhost, type, ...added, ...rest, blocked_status: blockedStatus };
  };

  /** Polls the shovel's state until `done` holds, and answers it. */
  const stateOf = async (name: string, done: (state: Answer) => boolean): Promise<Answer> => {
    let answer: Answer | undefined;
    await eventually(async () => {
      answer = await call('GET', `/api/shovels/vhost/%2F/${name}`);
      return done(answer);
    });
    return answer!;
  };

  it.skipIf(skip)(
    'a shovel set with PUT is listed as a parameter and as a running shovel, moves messages, and DELETE removes it',
    async () => {
      const name = `${prefix}-fwd`;
      const value = {
        'src-uri': 'amqp://',
        'src-queue': `${prefix}-in`,
        'dest-uri': target.amqp(),
        'dest-queue': `${prefix}-out`,
      };
      const connection = await amqplib.connect(target.amqp());
      try {
        expect((await call('PUT', `/api/parameters/shovel/%2F/${name}`, { value })).status).toBe(
          201,
        );
        expect((await call('PUT', `/api/parameters/shovel/%2F/${name}`, { value })).status).toBe(
          204,
        );
        const parameter = { value, vhost: '/', component: 'shovel', name };
        const one = await call('GET', `/api/parameters/shovel/%2F/${name}`);
        expect([one.status, one.json]).toEqual([200, parameter]);
        for (const path of ['/api/parameters/shovel', '/api/parameters/shovel/%2F']) {
          const all = await call('GET', path);
          expect(all.json).toContainEqual(parameter);
        }

        const running = await stateOf(name, (a) => a.json?.[0]?.state === 'running');
        expect(running.json).toHaveLength(1);
        const [state] = running.json;
        const expected = asRunning(
          {
            node: expect.stringMatching(/^(rabbit|mqlite)@/),
            timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\d \d{1,2}:\d\d:\d\d$/),
            name,
            vhost: '/',
            type: 'dynamic',
            state: 'running',
            src_uri: 'amqp://',
            src_protocol: 'amqp091',
            dest_protocol: 'amqp091',
            dest_uri: hostOf(target.amqp()),
            src_queue: `${prefix}-in`,
            dest_queue: `${prefix}-out`,
          },
          { forwarded: 0, pending: 0, remaining: 'unlimited', remaining_unacked: 'unlimited' },
          'running',
        );
        expect(Object.keys(state)).toEqual(Object.keys(expected));
        expect(state).toEqual(expected);
        expect(JSON.stringify(running.json)).not.toContain('guest@');
        for (const path of ['/api/shovels', '/api/shovels/%2F']) {
          expect((await call('GET', path)).json).toContainEqual(state);
        }

        const channel = await connection.createConfirmChannel();
        channel.sendToQueue(`${prefix}-in`, Buffer.from('moved'));
        await channel.waitForConfirms();
        let got: amqplib.GetMessage | false = false;
        await eventually(async () => {
          got = await channel.get(`${prefix}-out`, { noAck: true });
          return got !== false;
        });
        expect((got as unknown as amqplib.GetMessage).content.toString()).toBe('moved');

        const deleted = await call('DELETE', `/api/shovels/vhost/%2F/${name}`);
        expect(deleted.status).toBe(204);
        expect((await call('GET', `/api/parameters/shovel/%2F/${name}`)).status).toBe(404);
        await eventually(
          async () => (await call('GET', `/api/shovels/vhost/%2F/${name}`)).status === 404,
        );
      } finally {
        await call('DELETE', `/api/parameters/shovel/%2F/${name}`);
        await call('DELETE', `/api/queues/%2F/${prefix}-in`);
        await call('DELETE', `/api/queues/%2F/${prefix}-out`);
        await connection.close();
      }
    },
  );

  it.skipIf(skip)(
    'refuses a definition with 400 in the plugin words, and 404s what does not exist',
    async () => {
      const name = `${prefix}-bad`;
      const path = `/api/parameters/shovel/%2F/${name}`;
      const bogus = { 'src-uri': 'amqp://', 'src-queue': 'x', 'dest-uri': 'amqp://' };
      const refused = await call('PUT', path, { value: { ...bogus, 'ack-mode': 'bogus' } });
      expect([refused.status, refused.json]).toEqual([
        400,
        {
          error: 'bad_request',
          reason:
            'Validation failed\n\nack-mode should be one of [&lt;&lt;"no-ack"&gt;&gt;,&lt;&lt;"on-publish"&gt;&gt;,&lt;&lt;"on-confirm"&gt;&gt;], actually was &lt;&lt;"bogus"&gt;&gt;\n',
        },
      ]);
      const missing = await call('PUT', path, bogus);
      expect([missing.status, missing.json]).toEqual([
        400,
        { error: 'bad_request', reason: '[{key_missing,value}]' },
      ]);
      const notFound = { error: 'Object Not Found', reason: 'Not Found' };
      for (const [method, url] of [
        ['GET', path],
        ['DELETE', path],
        ['GET', `/api/shovels/vhost/%2F/${name}`],
        ['DELETE', `/api/shovels/vhost/%2F/${name}`],
        ['GET', '/api/shovels/no-such-vhost'],
        ['GET', '/api/parameters/shovel/no-such-vhost'],
      ] as const) {
        const answer = await call(method, url);
        expect([method, url, answer.status, answer.json]).toEqual([method, url, 404, notFound]);
      }
    },
  );
});

describe('restarting a shovel over the management API', () => {
  it('DELETE /api/shovels/vhost/{vhost}/{name}/restart restarts it and keeps its definition', async () => {
    const base = managed.server.managementUrl!;
    const value = { 'src-uri': 'amqp://', 'src-queue': 'r-in', 'dest-uri': 'amqp://' };
    const put = await api(base, 'PUT', '/api/parameters/shovel/%2F/r', {
      value: { ...value, 'dest-queue': 'r-out' },
    });
    expect(put.status).toBe(201);
    await eventually(async () => (await managed.broker.shovels())[0]?.state === 'running', 20_000);
    const states: string[] = [];
    const { subscribe, unsubscribe } = await import('node:diagnostics_channel');
    const listener = (event: unknown) => states.push((event as { state: string }).state);
    subscribe('mqlite:shovel', listener);
    try {
      expect((await api(base, 'DELETE', '/api/shovels/vhost/%2F/r/restart')).status).toBe(204);
      await eventually(async () => states.at(-1) === 'running', 20_000);
      expect(states).toEqual(['starting', 'running']);
      expect((await api(base, 'GET', '/api/parameters/shovel/%2F/r')).status).toBe(200);
      expect((await api(base, 'DELETE', '/api/shovels/vhost/%2F/nope/restart')).status).toBe(404);
    } finally {
      unsubscribe('mqlite:shovel', listener);
      await managed.broker.clearShovel('r');
    }
  });
});
