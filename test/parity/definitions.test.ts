/**
 * Definitions files both ways against the live RabbitMQ: an export of RabbitMQ (`rabbitmqctl
 * export_definitions -`) loads into mqlite and routes the same, and mqlite's export loads into
 * RabbitMQ (`rabbitmqctl import_definitions`) and routes the same there. Everything is declared
 * under throwaway names and deleted afterwards; `rabbitmqctl` is slow, so it runs twice in all.
 */

import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type AMQPChannel, AMQPClient } from '@cloudamqp/amqp-client';
import { describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import type { Definitions } from '../../src/broker/definitions.js';
import { amqpUrl } from './targets.js';

const run = promisify(execFile);
const chosen = process.env.PARITY_TARGETS?.split(',').map((name) => name.trim());
const RABBITMQCTL_MS = 120_000;

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
  it(
    "RabbitMQ's export loads into mqlite and routes the same",
    async () => {
      const p = `defs-${Math.random().toString(36).slice(2, 10)}`;
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
        const { stdout } = await run('rabbitmqctl', ['export_definitions', '-'], {
          maxBuffer: 64 * 1024 * 1024,
        });
        const definitions = only(JSON.parse(stdout) as Definitions, p);
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
      const p = `defs-${Math.random().toString(36).slice(2, 10)}`;
      const dir = await mkdtemp(path.join(tmpdir(), 'mqlite-defs-'));
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
        const file = path.join(dir, 'definitions.json');
        // rabbitmqctl reads it as the rabbitmq user.
        await chmod(dir, 0o755);
        await writeFile(file, JSON.stringify(broker.exportDefinitions()), { mode: 0o644 });
        await run('rabbitmqctl', ['import_definitions', file]);
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
        await rm(dir, { recursive: true, force: true });
      }
    },
    RABBITMQCTL_MS,
  );
});
