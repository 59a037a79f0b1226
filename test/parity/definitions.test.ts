/**
 * Definitions files both ways against the live RabbitMQ: an export of RabbitMQ (`rabbitmqctl
 * export_definitions -`) loads into mqlite and routes the same, and mqlite's export loads into
 * RabbitMQ (`rabbitmqctl import_definitions`) and routes the same there; with policies, both
 * sides expire, dead-letter and cap by them alike. Everything is declared under throwaway names
 * and deleted afterwards, which a last export checks; `rabbitmqctl` is slow, so it runs as few
 * times as the checks allow.
 */

import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type AMQPBaseClient, type AMQPChannel, AMQPClient } from '@cloudamqp/amqp-client';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Definitions } from '../../src/broker/definitions.js';
import type { Policy } from '../../src/broker/policies.js';
import { ManualClock } from '../../src/testing/manual-clock.js';
import { amqpUrl } from './targets.js';

const run = promisify(execFile);
const chosen = process.env.PARITY_TARGETS?.split(',').map((name) => name.trim());
const RABBITMQCTL_MS = 120_000;
/** Every name of this file starts so; the last export finds none left. */
const SUITE = `defs-${Math.random().toString(36).slice(2, 8)}`;
const throwaway = () => `${SUITE}-${Math.random().toString(36).slice(2, 6)}`;
/** The sections of a definitions file these tests leave empty. */
const NOTHING_ELSE = {
  rabbit_version: '3.10.0',
  rabbitmq_version: '3.10.0',
  product_name: 'RabbitMQ',
  users: [],
  vhosts: [],
  permissions: [],
  topic_permissions: [],
  parameters: [],
  global_parameters: [],
};
/** RabbitMQ's expiry runs on its own timers: short, so the poll for the dead letter ends soon. */
const TTL_MS = 200;

async function exportRabbit(): Promise<Definitions> {
  const { stdout } = await run('rabbitmqctl', ['export_definitions', '-'], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as Definitions;
}

/** Writes a definitions file where rabbitmqctl (running as the rabbitmq user) can read it. */
async function importRabbit(definitions: Definitions): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mqlite-defs-'));
  try {
    const file = path.join(dir, 'definitions.json');
    await chmod(dir, 0o755);
    await writeFile(file, JSON.stringify(definitions), { mode: 0o644 });
    await run('rabbitmqctl', ['import_definitions', file]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Clears policies on RabbitMQ; one already gone is no failure (the last export checks). */
async function clearRabbitPolicies(names: readonly string[]): Promise<void> {
  await Promise.allSettled(names.map((name) => run('rabbitmqctl', ['clear_policy', name])));
}

/** What a dead letter shows of its death, but the time it died. */
function deathOf(message: { body: string; headers: Record<string, unknown> | undefined }) {
  const h = message.headers ?? {};
  const [death] = (h['x-death'] ?? []) as Record<string, unknown>[];
  const { time: _time, ...rest } = death ?? {};
  return {
    body: message.body,
    firstDeath: [h['x-first-death-reason'], h['x-first-death-queue'], h['x-first-death-exchange']],
    death: { ...rest, count: Number(rest.count) },
  };
}

/**
 * Publishes one message to `queue` on both sides, lets it outlive its policy TTL (mqlite's
 * clock advanced past it, RabbitMQ polled until its dead letter arrives) and reads the dead
 * letter of each side from `dead`.
 */
async function expireOnBoth(
  broker: Broker,
  clock: ManualClock,
  channel: AMQPChannel,
  queue: string,
  dead: string,
) {
  await broker.publish('', 'late', { routingKey: queue });
  await channel.basicPublish('', queue, 'late');
  clock.advance(TTL_MS + 1);
  const dlq = await broker.queue(dead, { passive: true });
  const mine = await dlq.get();
  const theirs = await vi.waitFor(
    async () => {
      const m = await channel.basicGet(dead);
      if (!m) throw new Error(`no dead letter in ${dead} yet`);
      return m;
    },
    { timeout: 15_000, interval: 50 },
  );
  return {
    onMqlite: mine && deathOf({ body: mine.bodyString(), headers: mine.properties.headers }),
    onRabbit: deathOf({ body: theirs.bodyToString() ?? '', headers: theirs.properties.headers }),
  };
}

/** Publishes `bodies` to `queue` on both sides and reads what each side kept. */
async function capOnBoth(
  broker: Broker,
  channel: AMQPChannel,
  queue: string,
  bodies: readonly string[],
) {
  for (const body of bodies) {
    await broker.publish('', body, { routingKey: queue });
    await channel.basicPublish('', queue, body);
  }
  return {
    onMqlite: await drainMqlite(broker, queue),
    onRabbit: await drainRabbit(channel, queue),
  };
}

/**
 * With `${p}-expiry` (TTL_MS, dead-lettering to the fanout `${p}-dlx`, bound to `${p}-dead`) on
 * `${p}-expiring`, and `${p}-cap` (max-length 2) on `${p}-capped`: a message expires into the
 * dead letter queue with the same x-death, and the cap drops the head, alike on both sides.
 */
async function expectPoliciesActAlike(
  broker: Broker,
  clock: ManualClock,
  channel: AMQPChannel,
  p: string,
) {
  const expired = await expireOnBoth(broker, clock, channel, `${p}-expiring`, `${p}-dead`);
  expect(expired.onMqlite).toEqual(expired.onRabbit);
  expect(expired.onMqlite).toEqual({
    body: 'late',
    firstDeath: ['expired', `${p}-expiring`, ''],
    death: {
      count: 1,
      reason: 'expired',
      queue: `${p}-expiring`,
      exchange: '',
      'routing-keys': [`${p}-expiring`],
    },
  });
  const capped = await capOnBoth(broker, channel, `${p}-capped`, ['1', '2', '3']);
  expect(capped.onMqlite).toEqual(capped.onRabbit);
  expect(capped.onMqlite).toEqual(['2', '3']);
}

/** Deletes the queues, exchange and policies `expectPoliciesActAlike` uses from RabbitMQ. */
async function deletePolicyTopology(connection: AMQPBaseClient, p: string) {
  const cleanup = await connection.channel();
  for (const q of ['expiring', 'dead', 'capped']) await cleanup.queueDelete(`${p}-${q}`);
  await cleanup.exchangeDelete(`${p}-dlx`);
  await connection.close();
  await clearRabbitPolicies([`${p}-expiry`, `${p}-cap`]);
}

/** Policies in name order: neither side promises an order. */
const byName = (policies: readonly Policy[]) =>
  [...policies].sort((a, b) => (a.name < b.name ? -1 : 1));

/** Bodies of every ready message of a RabbitMQ queue. */
async function drainRabbit(channel: AMQPChannel, queue: string): Promise<string[]> {
  const out: string[] = [];
  for (let m = await channel.basicGet(queue); m; m = await channel.basicGet(queue)) {
    out.push(m.bodyToString() ?? '');
  }
  return out;
}

async function drainMqlite(broker: Broker, queue: string): Promise<string[]> {
  const q = await broker.queue(queue, { passive: true });
  const out: string[] = [];
  for (let m = await q.get(); m; m = await q.get()) out.push(m.bodyString());
  return out;
}

/** The part of a definitions file that names `prefix`. */
function only(definitions: Definitions, prefix: string): Definitions {
  const mine = (...names: string[]) => names.some((n) => n.startsWith(prefix));
  return {
    ...definitions,
    queues: definitions.queues.filter((q) => mine(q.name)),
    exchanges: definitions.exchanges.filter((e) => mine(e.name)),
    bindings: definitions.bindings.filter((b) => mine(b.source, b.destination)),
    policies: definitions.policies.filter((p) => mine(p.name)),
  };
}

/** Publishes each routing key (its own body) to `exchange`, then reads each queue. */
async function routeOnBoth(
  broker: Broker,
  channel: AMQPChannel,
  exchange: string,
  keys: readonly string[],
  queues: readonly string[],
) {
  await channel.confirmSelect();
  for (const key of keys) {
    await broker.publish(exchange, key, { routingKey: key });
    await channel.basicPublish(exchange, key, key);
  }
  const onMqlite: Record<string, string[]> = {};
  const onRabbit: Record<string, string[]> = {};
  for (const q of queues) {
    onMqlite[q] = await drainMqlite(broker, q);
    onRabbit[q] = await drainRabbit(channel, q);
  }
  return { onMqlite, onRabbit };
}

describe.runIf(!chosen || chosen.includes('rabbitmq'))('definitions with RabbitMQ 3.10', () => {
  afterAll(async () => {
    const left = only(await exportRabbit(), SUITE);
    expect([left.queues, left.exchanges, left.bindings, left.policies]).toEqual([[], [], [], []]);
  }, RABBITMQCTL_MS);

  it(
    "RabbitMQ's export loads into mqlite and routes the same",
    async () => {
      const p = throwaway();
      const client = new AMQPClient(amqpUrl);
      const connection = await client.connect();
      const channel = await connection.channel();
      try {
        await channel.exchangeDeclare(`${p}-orders`, 'topic', { durable: true });
        await channel.exchangeDeclare(`${p}-copies`, 'fanout', { durable: true });
        await channel.queueDeclare(`${p}-jobs`, { durable: true }, { 'x-max-length': 2 });
        await channel.queueDeclare(`${p}-audit`, { durable: false });
        await channel.queueBind(`${p}-jobs`, `${p}-orders`, 'orders.*');
        await channel.exchangeBind(`${p}-copies`, `${p}-orders`, '#.eu');
        await channel.queueBind(`${p}-audit`, `${p}-copies`, '');
        const definitions = only(await exportRabbit(), p);
        expect(definitions.bindings).toHaveLength(3);
        await using broker = await Broker.open({ definitions });
        expect(broker.bindings(`${p}-copies`, 'exchange')).toEqual([
          { source: `${p}-orders`, routingKey: '#.eu', args: {} },
        ]);
        const keys = ['orders.eu', 'orders.us', 'orders.x.eu', 'orders.fr', 'stock.eu'];
        const { onMqlite, onRabbit } = await routeOnBoth(broker, channel, `${p}-orders`, keys, [
          `${p}-jobs`,
          `${p}-audit`,
        ]);
        expect(onMqlite).toEqual(onRabbit);
        expect(onMqlite[`${p}-jobs`]).toEqual(['orders.us', 'orders.fr']);
        expect(onMqlite[`${p}-audit`]).toEqual(['orders.eu', 'orders.x.eu', 'stock.eu']);
      } finally {
        for (const q of ['jobs', 'audit']) await channel.queueDelete(`${p}-${q}`);
        for (const e of ['orders', 'copies']) await channel.exchangeDelete(`${p}-${e}`);
        await connection.close();
      }
    },
    RABBITMQCTL_MS,
  );

  it(
    "mqlite's export loads into RabbitMQ with rabbitmqctl import_definitions and routes the same",
    async () => {
      const p = throwaway();
      await using broker = await Broker.open();
      const client = new AMQPClient(amqpUrl);
      const connection = await client.connect();
      const channel = await connection.channel();
      try {
        const logs = await broker.topicExchange(`${p}-logs`);
        const fan = await broker.fanoutExchange(`${p}-fan`, { internal: true });
        await broker.exchange(`${p}-unrouted`, 'fanout', { durable: false });
        await broker.exchange(`${p}-alt`, 'direct', {
          arguments: { 'alternate-exchange': `${p}-unrouted` },
        });
        await fan.bind(logs, '*.error');
        await broker.bindExchange(`${p}-alt`, `${p}-logs`, '#');
        const errors = await broker.queue(`${p}-errors`, { maxPriority: 5, messageTtl: 60_000 });
        const rest = await broker.queue(`${p}-rest`, { durable: false });
        const app = await broker.queue(`${p}-app`);
        await errors.bind(fan);
        await rest.bind(`${p}-unrouted`);
        await app.bind(`${p}-alt`, 'app.info');
        await importRabbit(broker.exportDefinitions());
        const keys = ['db.error', 'app.info', 'app.error', 'db.info'];
        const queues = [`${p}-errors`, `${p}-rest`, `${p}-app`];
        const { onMqlite, onRabbit } = await routeOnBoth(
          broker,
          channel,
          `${p}-logs`,
          keys,
          queues,
        );
        expect(onRabbit).toEqual(onMqlite);
        expect(onMqlite).toEqual({
          [`${p}-errors`]: ['db.error', 'app.error'],
          [`${p}-rest`]: ['db.error', 'app.error', 'db.info'],
          [`${p}-app`]: ['app.info'],
        });
        // A redeclare with the same arguments succeeds only if the import declared them.
        const declared = await channel.queueDeclare(
          `${p}-errors`,
          { durable: true },
          { 'x-max-priority': 5, 'x-message-ttl': 60_000 },
        );
        expect(declared.name).toBe(`${p}-errors`);
      } finally {
        const cleanup = await connection.channel();
        for (const q of ['errors', 'rest', 'app']) await cleanup.queueDelete(`${p}-${q}`);
        for (const e of ['logs', 'fan', 'unrouted', 'alt'])
          await cleanup.exchangeDelete(`${p}-${e}`);
        await connection.close();
      }
    },
    RABBITMQCTL_MS,
  );

  it(
    "RabbitMQ's export with policies loads into mqlite, which expires, dead-letters and caps by them alike",
    async () => {
      const p = throwaway();
      const client = new AMQPClient(amqpUrl);
      const connection = await client.connect();
      const channel = await connection.channel();
      const named = (name: string) => ({
        name: `${p}-${name}`,
        vhost: '/',
        durable: true,
        auto_delete: false,
        arguments: {},
      });
      const policy = (name: string, queueName: string, definition: Policy['definition']) => ({
        name: `${p}-${name}`,
        vhost: '/' as const,
        pattern: `^${p}-${queueName}$`,
        'apply-to': 'queues' as const,
        priority: 0,
        definition,
      });
      try {
        // One import sets RabbitMQ up: it declares the policies before the queues they match.
        await importRabbit({
          ...NOTHING_ELSE,
          policies: [
            policy('expiry', 'expiring', {
              'message-ttl': TTL_MS,
              'dead-letter-exchange': `${p}-dlx`,
            }),
            policy('cap', 'capped', { 'max-length': 2 }),
          ],
          queues: [named('expiring'), named('dead'), named('capped')],
          exchanges: [{ ...named('dlx'), type: 'fanout' }],
          bindings: [
            {
              source: `${p}-dlx`,
              vhost: '/',
              destination: `${p}-dead`,
              destination_type: 'queue',
              routing_key: '',
              arguments: {},
            },
          ],
        });
        const definitions = only(await exportRabbit(), p);
        expect(definitions.policies).toHaveLength(2);
        const clock = new ManualClock();
        await using broker = await Broker.open({ definitions, clock });
        expect(byName(broker.policies())).toEqual(byName(definitions.policies));

        await expectPoliciesActAlike(broker, clock, channel, p);
      } finally {
        await deletePolicyTopology(connection, p);
      }
    },
    RABBITMQCTL_MS,
  );

  it(
    "mqlite's export with policies loads into RabbitMQ, which lists them and acts on them alike",
    async () => {
      const p = throwaway();
      const clock = new ManualClock();
      await using broker = await Broker.open({ clock });
      const client = new AMQPClient(amqpUrl);
      const connection = await client.connect();
      const channel = await connection.channel();
      try {
        await broker.fanoutExchange(`${p}-dlx`);
        const dead = await broker.queue(`${p}-dead`);
        await dead.bind(`${p}-dlx`);
        await broker.queue(`${p}-expiring`);
        await broker.queue(`${p}-capped`, { durable: false });
        await broker.setPolicy(`${p}-expiry`, {
          pattern: `^${p}-expiring$`,
          applyTo: 'queues',
          definition: { 'message-ttl': TTL_MS, 'dead-letter-exchange': `${p}-dlx` },
        });
        await broker.setPolicy(`${p}-cap`, {
          pattern: `^${p}-cap`,
          priority: 1,
          definition: { 'max-length': 2, overflow: 'drop-head' },
        });
        await importRabbit(broker.exportDefinitions());
        const { stdout } = await run('rabbitmqctl', ['list_policies', '--formatter', 'json']);
        // The JSON formatter writes each definition as a JSON string.
        const listed = (JSON.parse(stdout) as (Policy & { definition: string })[])
          .filter((x) => x.name.startsWith(p))
          .map((x) => ({ ...x, definition: JSON.parse(x.definition) }));
        expect(byName(listed)).toEqual(byName(broker.policies()));

        await expectPoliciesActAlike(broker, clock, channel, p);
        // The export names a policy's limits in the policy alone, not as arguments of its queues.
        const redeclared = await channel.queueDeclare(`${p}-capped`, { durable: false }, {});
        expect(redeclared.name).toBe(`${p}-capped`);
      } finally {
        await deletePolicyTopology(connection, p);
      }
    },
    RABBITMQCTL_MS,
  );
});
