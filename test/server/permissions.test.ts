/**
 * Permissions within a vhost, over the wire: one definitions file (users, a vhost, a restricted
 * user's configure/write/read patterns) serves mqlite's server and, imported with `rabbitmqctl`,
 * the live RabbitMQ; every operation then answers alike on both, refusals with the same code and
 * text. The vhost is a throwaway one, deleted afterwards with its users; RabbitMQ's side is
 * skipped, saying why, when it or `rabbitmqctl` is not there.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import amqplib, { type Channel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { hashPassword, Users } from '../../src/server/auth.js';
import { AmqpException } from '../../src/server/errors.js';
import {
  expandTopicVariables,
  type PermissionScope,
  Permissions,
} from '../../src/server/permissions.js';
import { type AmqpServer, listen } from '../../src/server/server.js';
import { onlyMqlite, rabbitUrl } from './served.js';

const run = promisify(execFile);
const RABBITMQCTL_MS = 120_000;
const suffix = Math.random().toString(36).slice(2, 8);
const VHOST = `perm-${suffix}`;
const ADMIN = { name: `perm-admin-${suffix}`, password: 'admin-pw' };
const USER = { name: `perm-user-${suffix}`, password: 'user-pw' };
/** Anchored configure and read; write unanchored, so `xpw-` names match it too. */
const PATTERNS = { configure: '^pc-', write: 'pw-', read: '^pr-' };

const user = (u: { name: string; password: string }) => ({
  name: u.name,
  password_hash: hashPassword(u.password),
  hashing_algorithm: 'rabbit_password_hashing_sha256',
  tags: [],
});
/** The restricted user's topic patterns: `r.` keys to bind, `w.` keys to publish. */
const topic = (exchange: string, write = '^w\\.', read = '^r\\.') => ({
  user: USER.name,
  vhost: VHOST,
  exchange,
  write,
  read,
});
const definitions = {
  users: [user(ADMIN), user(USER)],
  vhosts: [{ name: VHOST }],
  permissions: [
    { user: ADMIN.name, vhost: VHOST, configure: '.*', write: '.*', read: '.*' },
    { user: USER.name, vhost: VHOST, ...PATTERNS },
  ],
  // Exchange names starting `pr-` and holding `pw-` may be read and written.
  topic_permissions: [
    topic('pr-pw-tx'),
    topic('pr-pw-vx', '^{username}\\.{vhost}\\.', '^{client_id}$'),
    topic('pr-pw-ex', '', ''),
    topic('pw-ix'),
    topic('pw-x'),
    topic('pr-x'),
    topic('pr-pw-gone'),
  ],
};

type Probe = (channel: Channel) => Promise<unknown>;

/** Publishes, then waits on a round trip: a refused publish closes the channel by then. */
const publish =
  (exchange: string, routingKey: string, options?: { CC: string[]; BCC: string[] }): Probe =>
  async (c) => {
    c.publish(exchange, routingKey, Buffer.from('m'), options);
    await c.checkQueue('pr-q');
  };

/** Each operation on a fresh channel of the restricted user. */
const PROBES: Readonly<Record<string, Probe>> = {
  'declare a queue without configure': (c) => c.assertQueue('other-q2', { durable: false }),
  'declare a queue with configure': (c) => c.assertQueue('pc-new', { durable: false }),
  'delete a queue with configure': (c) => c.deleteQueue('pc-new'),
  'redeclare an existing queue without configure': (c) =>
    c.assertQueue('other-q', { durable: false }),
  'declare a queue passively': (c) => c.checkQueue('other-q'),
  'declare a missing queue passively': (c) => c.checkQueue('missing-q'),
  'declare a server-named queue': (c) => c.assertQueue('', { exclusive: true }),
  'declare a reserved name': (c) => c.assertQueue('amq.foo', { durable: false }),
  'declare a new queue dead-lettering to a refused exchange': (c) =>
    c.assertQueue('pc-dlx', { durable: false, deadLetterExchange: 'other-x' }),
  'redeclare an existing queue with a dead-letter exchange': (c) =>
    c.assertQueue('pc-q', { durable: false, deadLetterExchange: 'other-x' }),
  'redeclare a queue the admin made with that dead-letter exchange': (c) =>
    c.assertQueue('pc-dlxq', { durable: false, deadLetterExchange: 'other-x' }),
  'declare an exchange without configure': (c) => c.assertExchange('other-x2', 'direct'),
  'declare an exchange passively': (c) => c.checkExchange('other-x'),
  'declare a new exchange with a refused alternate': (c) =>
    c.assertExchange('pc-ae', 'direct', { alternateExchange: 'other-x' }),
  'redeclare an exchange the admin made with that alternate': (c) =>
    c.assertExchange('pc-aex', 'direct', { durable: false, alternateExchange: 'other-x' }),
  'delete an exchange without configure': (c) => c.deleteExchange('other-x'),
  'delete a missing exchange with configure': (c) => c.deleteExchange('pc-missing'),
  'delete a queue without configure': (c) => c.deleteQueue('other-q'),
  'delete a missing queue without configure': (c) => c.deleteQueue('other-missing'),
  'delete the default exchange': (c) => c.deleteExchange(''),
  'delete a system exchange': (c) => c.deleteExchange('amq.direct'),
  'bind with write on the queue and read on the exchange': (c) => c.bindQueue('pw-q', 'pr-x', 'k'),
  'bind without write on the queue': (c) => c.bindQueue('other-q', 'pr-x', 'k'),
  'bind without read on the exchange': (c) => c.bindQueue('pw-q', 'other-x', 'k'),
  'bind without either': (c) => c.bindQueue('other-q', 'other-x', 'k'),
  'bind to the default exchange': (c) => c.bindQueue('pw-q', '', 'k'),
  'bind to a missing exchange without read': (c) => c.bindQueue('pw-q', 'missing-x', 'k'),
  'bind a missing queue with both': (c) => c.bindQueue('pw-missing', 'pr-x', 'k'),
  'bind the last declared queue': async (c) => {
    await c.checkQueue('other-q');
    await c.bindQueue('', 'pr-x', 'k');
  },
  'unbind without write on the queue': (c) => c.unbindQueue('other-q', 'pr-x', 'k'),
  'bind exchanges with write and read': (c) => c.bindExchange('pw-x', 'pr-x', 'k'),
  'bind exchanges without write on the destination': (c) => c.bindExchange('other-x', 'pr-x', 'k'),
  'bind exchanges without read on the source': (c) => c.bindExchange('pw-x', 'other-x', 'k'),
  'bind the default exchange to an exchange': (c) => c.bindExchange('', 'pr-x', 'k'),
  'bind an exchange to the default exchange': (c) => c.bindExchange('pw-x', '', 'k'),
  'unbind exchanges without read on the source': (c) => c.unbindExchange('pw-x', 'other-x', 'k'),
  'publish without write': publish('other-x', 'k'),
  'publish to the default exchange without write on amq.default': publish('', 'pr-q'),
  'publish with write': publish('pw-x', 'k'),
  'publish to a missing exchange with write': publish('xpw-missing', 'k'),
  'publish to a missing exchange without write': publish('other-missing', 'k'),
  'get without read': (c) => c.get('other-q'),
  'get with read': (c) => c.get('pr-q'),
  'get from a missing queue without read': (c) => c.get('missing-q'),
  'get from the last declared queue, none declared': (c) => c.get(''),
  'consume without read': (c) => c.consume('other-q', () => {}),
  'consume with read': (c) => c.consume('pr-q', () => {}),
  'consume direct replies': (c) => c.consume('amq.rabbitmq.reply-to', () => {}, { noAck: true }),
  'purge without read': (c) => c.purgeQueue('other-q'),
  'purge with read': (c) => c.purgeQueue('pr-q'),
  'publish a key the topic write pattern allows': publish('pr-pw-tx', 'w.a'),
  'publish a key the topic write pattern refuses': publish('pr-pw-tx', 'r.a'),
  'publish an empty key the topic write pattern refuses': publish('pr-pw-tx', ''),
  'publish CC and BCC keys the topic write pattern refuses': publish('pr-pw-tx', 'w.a', {
    CC: ['r.b'],
    BCC: ['r.c'],
  }),
  'publish to a direct exchange with topic permissions': publish('pw-x', 'r.a'),
  'publish to an internal topic exchange with topic permissions': publish('pw-ix', 'r.a'),
  'publish to a missing exchange with topic permissions': publish('pr-pw-gone', 'r.a'),
  'publish to a topic exchange without topic permissions': publish('pr-pw-open', 'r.a'),
  'publish an empty key where the topic pattern is empty': publish('pr-pw-ex', ''),
  'publish a key where the topic pattern is empty': publish('pr-pw-ex', 'a'),
  'publish a key matching {username} and {vhost}': publish('pr-pw-vx', `${USER.name}.${VHOST}.a`),
  'publish {username} and {vhost} literally': publish('pr-pw-vx', '{username}.{vhost}.a'),
  'bind with a key the topic read pattern allows': (c) => c.bindQueue('pw-q', 'pr-pw-tx', 'r.a'),
  'bind with a key the topic read pattern refuses': (c) => c.bindQueue('pw-q', 'pr-pw-tx', 'w.a'),
  'unbind with a key the topic read pattern refuses': (c) =>
    c.unbindQueue('pw-q', 'pr-pw-tx', 'w.a'),
  'bind a missing queue with a key the topic read pattern refuses': (c) =>
    c.bindQueue('pw-missing', 'pr-pw-tx', 'w.a'),
  'bind to a direct exchange with topic permissions': (c) => c.bindQueue('pw-q', 'pr-x', 'w.a'),
  'bind to a missing exchange with topic permissions': (c) =>
    c.bindQueue('pw-q', 'pr-pw-gone', 'w.a'),
  'bind {client_id} literally': (c) => c.bindQueue('pw-q', 'pr-pw-vx', '{client_id}'),
  'bind exchanges with a key the source topic read pattern refuses': (c) =>
    c.bindExchange('pw-x', 'pr-pw-tx', 'w.a'),
  'unbind exchanges with a key the source topic read pattern refuses': (c) =>
    c.unbindExchange('pw-x', 'pr-pw-tx', 'w.a'),
  'bind exchanges with a key the destination topic read pattern refuses': (c) =>
    c.bindExchange('pr-pw-tx', 'pr-pw-open', 'w.a'),
};

const refused = (kind: string, name: string) =>
  `403 ACCESS_REFUSED - access to ${kind} '${name}' in vhost '${VHOST}' refused for user '${USER.name}'`;
const DEFAULT_EXCHANGE = '403 ACCESS_REFUSED - operation not permitted on the default exchange';
const topicRefused = (key: string, exchange: string) =>
  `403 ACCESS_REFUSED - access to topic '${key}' in exchange '${exchange}' in vhost '${VHOST}' refused for user '${USER.name}'`;

/** What RabbitMQ 3.10 answers to each probe. */
const EXPECTED: Readonly<Record<keyof typeof PROBES, string>> = {
  'declare a queue without configure': refused('queue', 'other-q2'),
  'declare a queue with configure': 'ok',
  'delete a queue with configure': 'ok',
  'redeclare an existing queue without configure': refused('queue', 'other-q'),
  'declare a queue passively': 'ok',
  'declare a missing queue passively': `404 NOT_FOUND - no queue 'missing-q' in vhost '${VHOST}'`,
  'declare a server-named queue': refused('queue', 'amq.gen-*'),
  'declare a reserved name':
    "403 ACCESS_REFUSED - queue name 'amq.foo' contains reserved prefix 'amq.*'",
  'declare a new queue dead-lettering to a refused exchange': refused('queue', 'pc-dlx'),
  'redeclare an existing queue with a dead-letter exchange': `406 PRECONDITION_FAILED - inequivalent arg 'x-dead-letter-exchange' for queue 'pc-q' in vhost '${VHOST}': received the value 'other-x' of type 'longstr' but current is none`,
  'redeclare a queue the admin made with that dead-letter exchange': 'ok',
  'declare an exchange without configure': refused('exchange', 'other-x2'),
  'declare an exchange passively': 'ok',
  'declare a new exchange with a refused alternate': refused('exchange', 'pc-ae'),
  'redeclare an exchange the admin made with that alternate': 'ok',
  'delete an exchange without configure': refused('exchange', 'other-x'),
  'delete a missing exchange with configure': 'ok',
  'delete a queue without configure': refused('queue', 'other-q'),
  'delete a missing queue without configure': refused('queue', 'other-missing'),
  'delete the default exchange': DEFAULT_EXCHANGE,
  'delete a system exchange': `403 ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '${VHOST}' not allowed`,
  'bind with write on the queue and read on the exchange': 'ok',
  'bind without write on the queue': refused('queue', 'other-q'),
  'bind without read on the exchange': refused('exchange', 'other-x'),
  'bind without either': refused('queue', 'other-q'),
  'bind to the default exchange': DEFAULT_EXCHANGE,
  'bind to a missing exchange without read': refused('exchange', 'missing-x'),
  'bind a missing queue with both': `404 NOT_FOUND - no queue 'pw-missing' in vhost '${VHOST}'`,
  'bind the last declared queue': refused('queue', 'other-q'),
  'unbind without write on the queue': refused('queue', 'other-q'),
  'bind exchanges with write and read': 'ok',
  'bind exchanges without write on the destination': refused('exchange', 'other-x'),
  'bind exchanges without read on the source': refused('exchange', 'other-x'),
  'bind the default exchange to an exchange': refused('exchange', 'amq.default'),
  'bind an exchange to the default exchange': DEFAULT_EXCHANGE,
  'unbind exchanges without read on the source': refused('exchange', 'other-x'),
  'publish without write': refused('exchange', 'other-x'),
  'publish to the default exchange without write on amq.default': refused(
    'exchange',
    'amq.default',
  ),
  'publish with write': 'ok',
  'publish to a missing exchange with write': `404 NOT_FOUND - no exchange 'xpw-missing' in vhost '${VHOST}'`,
  'publish to a missing exchange without write': refused('exchange', 'other-missing'),
  'get without read': refused('queue', 'other-q'),
  'get with read': 'ok',
  'get from a missing queue without read': refused('queue', 'missing-q'),
  'get from the last declared queue, none declared': '404 NOT_FOUND - no previously declared queue',
  'consume without read': refused('queue', 'other-q'),
  'consume with read': 'ok',
  'consume direct replies': 'ok',
  'purge without read': refused('queue', 'other-q'),
  'purge with read': 'ok',
  'publish a key the topic write pattern allows': 'ok',
  'publish a key the topic write pattern refuses': topicRefused('r.a', 'pr-pw-tx'),
  'publish an empty key the topic write pattern refuses': topicRefused('', 'pr-pw-tx'),
  'publish CC and BCC keys the topic write pattern refuses': 'ok',
  'publish to a direct exchange with topic permissions': 'ok',
  'publish to an internal topic exchange with topic permissions': `403 ACCESS_REFUSED - cannot publish to internal exchange 'pw-ix' in vhost '${VHOST}'`,
  'publish to a missing exchange with topic permissions': `404 NOT_FOUND - no exchange 'pr-pw-gone' in vhost '${VHOST}'`,
  'publish to a topic exchange without topic permissions': 'ok',
  'publish an empty key where the topic pattern is empty': 'ok',
  'publish a key where the topic pattern is empty': topicRefused('a', 'pr-pw-ex'),
  'publish a key matching {username} and {vhost}': 'ok',
  'publish {username} and {vhost} literally': topicRefused('{username}.{vhost}.a', 'pr-pw-vx'),
  'bind with a key the topic read pattern allows': 'ok',
  'bind with a key the topic read pattern refuses': topicRefused('w.a', 'pr-pw-tx'),
  'unbind with a key the topic read pattern refuses': topicRefused('w.a', 'pr-pw-tx'),
  'bind a missing queue with a key the topic read pattern refuses': topicRefused('w.a', 'pr-pw-tx'),
  'bind to a direct exchange with topic permissions': 'ok',
  'bind to a missing exchange with topic permissions': `404 NOT_FOUND - no exchange 'pr-pw-gone' in vhost '${VHOST}'`,
  'bind {client_id} literally': 'ok',
  'bind exchanges with a key the source topic read pattern refuses': topicRefused(
    'w.a',
    'pr-pw-tx',
  ),
  'unbind exchanges with a key the source topic read pattern refuses': topicRefused(
    'w.a',
    'pr-pw-tx',
  ),
  'bind exchanges with a key the destination topic read pattern refuses': 'ok',
};

/** `amqp://user:password@host:port/vhost` of a broker at `base` (`amqp://[user@]host:port`). */
function urlOf(base: string, who: { name: string; password: string }): string {
  const { host } = new URL(base);
  const credentials = `${encodeURIComponent(who.name)}:${encodeURIComponent(who.password)}`;
  return `amqp://${credentials}@${host}/${encodeURIComponent(VHOST)}`;
}

/** Runs every probe as the restricted user; the topology is made and removed by the admin. */
async function answers(base: string): Promise<Record<string, string>> {
  const admin = await amqplib.connect(urlOf(base, ADMIN));
  const ac = await admin.createChannel();
  for (const q of ['pc-q', 'pw-q', 'pr-q', 'other-q']) await ac.assertQueue(q, { durable: false });
  for (const x of ['pw-x', 'pr-x', 'other-x']) {
    await ac.assertExchange(x, 'direct', { durable: false });
  }
  for (const x of ['pr-pw-tx', 'pr-pw-vx', 'pr-pw-ex', 'pr-pw-open', 'pw-ix']) {
    await ac.assertExchange(x, 'topic', { durable: false, internal: x === 'pw-ix' });
  }
  // A dead-letter exchange and an alternate the restricted user may not use.
  await ac.assertQueue('pc-dlxq', { durable: false, deadLetterExchange: 'other-x' });
  await ac.assertExchange('pc-aex', 'direct', { durable: false, alternateExchange: 'other-x' });
  const connection = await amqplib.connect(urlOf(base, USER));
  connection.on('error', () => {});
  const results: Record<string, string> = {};
  try {
    for (const [label, probe] of Object.entries(PROBES)) {
      const channel = await connection.createChannel();
      channel.on('error', () => {});
      try {
        await probe(channel);
        await channel.close();
        results[label] = 'ok';
      } catch (error) {
        const { code, message } = error as { code?: number; message: string };
        const text = /with message "(.*)"$/.exec(message)?.[1] ?? message;
        results[label] = `${code} ${text.replace(/amq\.gen-[\w-]+/, 'amq.gen-*')}`;
      }
    }
  } finally {
    await connection.close();
    await admin.close();
  }
  return results;
}

/** A scope in which no exchange exists (topic permissions then check nothing). */
const NO_EXCHANGES: PermissionScope = {
  queueName: (name) => name,
  hasQueue: () => false,
  exchange: () => undefined,
};

describe('permission patterns', () => {
  const writing = (write: string) =>
    Permissions.of('u', 'orders', { configure: '.*', write, read: '.*' });

  it('match anywhere in a name unless anchored, as Erlang re:run matches', () => {
    expect(() => writing('b').publish('abc', 'k', NO_EXCHANGES)).not.toThrow();
    expect(() => writing('^b').publish('abc', 'k', NO_EXCHANGES)).toThrow(AmqpException);
    expect(() => writing('^abc$').publish('abc', 'k', NO_EXCHANGES)).not.toThrow();
    expect(() => writing('.*').publish('', 'k', NO_EXCHANGES)).not.toThrow();
  });

  it("grant nothing when empty, and name the default exchange 'amq.default'", () => {
    expect(() => writing('').publish('abc', 'k', NO_EXCHANGES)).toThrow(
      "ACCESS_REFUSED - access to exchange 'abc' in vhost 'orders' refused for user 'u'",
    );
    expect(() => writing('').publish('', 'k', NO_EXCHANGES)).toThrow(
      "ACCESS_REFUSED - access to exchange 'amq.default' in vhost 'orders' refused for user 'u'",
    );
    expect(() => writing('^amq\\.default$').publish('', 'k', NO_EXCHANGES)).not.toThrow();
  });
});

describe('topic permission variables', () => {
  it('are replaced by the names as they are, a $ in them included', () => {
    expect(expandTopicVariables('^{username}\\.{vhost}\\.{client_id}$', 'a$&b', 'v.1')).toBe(
      '^a$&b\\.v.1\\.{client_id}$',
    );
  });
});

describe('topic permissions in definitions', () => {
  const base = {
    users: [user(USER)],
    vhosts: [{ name: 'v' }],
    permissions: [{ user: USER.name, vhost: 'v', configure: '', write: '', read: '' }],
  };
  const entry = { user: USER.name, vhost: 'v', exchange: 'x', write: '', read: '' };

  it('are refused naming the entry and field when malformed', () => {
    const load = (topicPermission: object) =>
      Users.fromDefinitions({ ...base, topic_permissions: [topicPermission] }, 'd.json');
    expect(() => load({ ...entry, vhost: 'w' })).toThrow(
      "d.json: topic_permissions[0]: vhost 'w' is not in the definitions' vhosts",
    );
    expect(() => load({ ...entry, exchange: 1 })).toThrow(
      'd.json: topic_permissions[0].exchange must be a string',
    );
    const { read: _read, ...noRead } = entry;
    expect(() => load(noRead)).toThrow('d.json: topic_permissions[0].read must be a string');
    expect(() => load({ ...entry, write: '{username}(' })).toThrow(
      /^d\.json: topic_permissions\[0\]\.write is not a regular expression/,
    );
  });
});

describe('serving vhosts', () => {
  it('refuses a broker served as a vhost other than its own', async () => {
    await using root = await Broker.open();
    await using other = await Broker.open();
    await expect(listen(root, { vhosts: { orders: other } })).rejects.toThrow(
      new RangeError(
        "the broker served as vhost 'orders' is vhost '/': open it with Broker.open({ vhost: 'orders' })",
      ),
    );
  });
});

describe('permissions within a vhost on mqlite', () => {
  let root: Broker;
  let broker: Broker;
  let server: AmqpServer;
  beforeAll(async () => {
    root = await Broker.open();
    broker = await Broker.open({ vhost: VHOST });
    server = await listen(root, {
      users: Users.fromDefinitions(definitions),
      vhosts: { [VHOST]: broker },
    });
  });
  afterAll(async () => {
    await server.close();
    await broker.close();
    await root.close();
  });

  it('refuses what RabbitMQ refuses, with its code and text, and allows the rest', async () => {
    expect(await answers(server.url)).toEqual(EXPECTED);
  });
});

/** Why RabbitMQ's side cannot run, or undefined. */
async function rabbitUnavailable(): Promise<string | undefined> {
  if (onlyMqlite) return 'PARITY_TARGETS=mqlite';
  try {
    await run('rabbitmqctl', ['--version'], { timeout: RABBITMQCTL_MS });
  } catch (error) {
    return `rabbitmqctl is not usable: ${(error as Error).message}`;
  }
  try {
    await (await amqplib.connect(rabbitUrl)).close();
  } catch (error) {
    return `no RabbitMQ at ${new URL(rabbitUrl).host}: ${(error as Error).message}`;
  }
  return undefined;
}

const unavailable = await rabbitUnavailable();

const skipped = unavailable === undefined ? '' : ` (skipped: ${unavailable})`;

describe.skipIf(unavailable !== undefined)(
  `permissions within a vhost on RabbitMQ 3.10${skipped}`,
  () => {
    beforeAll(async () => {
      // Written where rabbitmqctl (running as the rabbitmq user) can read it.
      const dir = await mkdtemp(path.join(tmpdir(), 'mqlite-permissions-'));
      try {
        const file = path.join(dir, 'definitions.json');
        await chmod(dir, 0o755);
        await writeFile(file, JSON.stringify(definitions), { mode: 0o644 });
        await run('rabbitmqctl', ['import_definitions', file], { timeout: RABBITMQCTL_MS });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, RABBITMQCTL_MS);
    afterAll(async () => {
      await Promise.allSettled([
        run('rabbitmqctl', ['delete_vhost', VHOST], { timeout: RABBITMQCTL_MS }),
        run('rabbitmqctl', ['delete_user', ADMIN.name], { timeout: RABBITMQCTL_MS }),
        run('rabbitmqctl', ['delete_user', USER.name], { timeout: RABBITMQCTL_MS }),
      ]);
    }, RABBITMQCTL_MS);

    it('answers every probe as the table above says', async () => {
      expect(await answers(rabbitUrl)).toEqual(EXPECTED);
    });
  },
);
