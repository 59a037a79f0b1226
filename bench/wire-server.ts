/**
 * mqlite's AMQP 0-9-1 server against the local RabbitMQ 3.10 (`AMQP_URL`) and a LavinMQ 2.9.1
 * (`LAVINMQ_PORT`, default 5680; `../shared/lavinmq/start 5680`), through the same clients,
 * in the same run, taking turns:
 *
 * - throughput: publish (confirms off and on) and consume-with-ack of 100-byte messages over
 *   loopback with amqplib and @cloudamqp/amqp-client; mqlite on memory storage, and on fs for
 *   amqplib; and the limit, a server that only parses and drops frames, and delivers as many
 *   as were published without a queue (wire/sink.ts). Every
 *   server runs in a process of its own, as the brokers do.
 * - start: `Broker.open()` and `listen()` to the first `connection.start` a client reads, in the
 *   process, against LavinMQ's start script to the same point.
 * - small test: connect, declare, publish 10, consume 10, close, through amqplib; and its floor,
 *   the same against the frame sink in the process, which answers every method at once.
 * - memory: 1,000 idle amqplib connections with a channel and a consumer each.
 *
 * A broker that does not answer is left out with a message. Standalone:
 * `node --expose-gc --import tsx bench/wire-server.ts [section...]`; `WIRE_ROUNDS` and
 * `WIRE_SCALE` (a factor on message counts) shorten or lengthen it.
 */
import { execFile } from 'node:child_process';
import { connect as tcpConnect } from 'node:net';
import { promisify } from 'node:util';
import amqplib from 'amqplib';
import { Broker } from '../src/broker/broker.js';
import { PROTOCOL_HEADER } from '../src/server/handshake.js';
import { listen } from '../src/server/server.js';
import { isMain, LAVINMQ_PORT, printResults, SMOKE } from './harness.js';
import type { BenchResult } from './types.js';
import { BODY, CLIENTS, type ClientName, connect, type WireClient } from './wire/clients.js';
import { rssOf, spawnServer } from './wire/server-process.js';
import { listenSink, portOf } from './wire/sink.js';

const rabbitUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const lavinUrl = `amqp://guest:guest@127.0.0.1:${LAVINMQ_PORT}`;
/** LavinMQ's start and stop scripts (default: `../shared/lavinmq` beside the main checkout). */
const lavinScripts = process.env.LAVINMQ_HOME ?? '/work/shared/lavinmq';
const ROUNDS = SMOKE ? 1 : Number(process.env.WIRE_ROUNDS ?? 5);
const SCALE = SMOKE ? 0.01 : Number(process.env.WIRE_SCALE ?? 1);
/** RabbitMQ's cold start on this machine, measured before (not rerun: others share it). */
const RABBIT_COLD_START_MS = 3500;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function spread(values: readonly number[], format: (v: number) => string): string {
  return `${format(Math.min(...values))}–${format(Math.max(...values))}`;
}

const kilo = (v: number) => `${(v / 1000).toFixed(1)} k`;
const times = (v: number) => `${v.toFixed(2)}×`;

/** Whether an AMQP broker answers at `url`; says why not when it does not. */
async function reachable(name: string, url: string): Promise<boolean> {
  try {
    await (await amqplib.connect(url)).close();
    return true;
  } catch (error) {
    console.log(
      `${name} at ${url.replace(/:[^:@/]*@/, ':***@')} left out: ${(error as Error).message}`,
    );
    return false;
  }
}

// --- throughput --------------------------------------------------------------------------------

type Mode = 'publish' | 'publish confirmed' | 'consume';
const MODES: readonly Mode[] = ['publish', 'publish confirmed', 'consume'];

interface Target {
  readonly name: string;
  readonly url: string;
  /** Messages per measurement: the brokers are slower, so rounds take about as long. */
  readonly messages: number;
  readonly modes: readonly Mode[];
  readonly clients: readonly ClientName[];
}

async function measure(client: WireClient, queue: string, mode: Mode, n: number): Promise<number> {
  await client.purge(queue);
  if (mode === 'consume') await client.publish(queue, n, true);
  const start = performance.now();
  if (mode === 'consume') await client.consume(queue, n);
  else await client.publish(queue, n, mode === 'publish confirmed');
  return (n / (performance.now() - start)) * 1000;
}

async function throughput(): Promise<BenchResult[]> {
  const children = {
    memory: await spawnServer('memory'),
    fs: await spawnServer('fs'),
    sink: await spawnServer('sink'),
  };
  const n = Math.round(50_000 * SCALE);
  const brokerMessages = Math.round(20_000 * SCALE);
  const targets: Target[] = [
    { name: 'mqlite', url: children.memory.url, messages: n, modes: MODES, clients: CLIENTS },
    {
      name: 'mqlite fs',
      url: children.fs.url,
      messages: n,
      modes: ['publish confirmed', 'consume'],
      clients: ['amqplib'],
    },
    {
      name: 'sink',
      url: children.sink.url,
      messages: n,
      modes: MODES,
      clients: CLIENTS,
    },
  ];
  if (await reachable('rabbitmq', rabbitUrl)) {
    targets.push({
      name: 'rabbitmq',
      url: rabbitUrl,
      messages: brokerMessages,
      modes: MODES,
      clients: CLIENTS,
    });
  }
  if (await reachable('lavinmq', lavinUrl)) {
    targets.push({
      name: 'lavinmq',
      url: lavinUrl,
      messages: brokerMessages,
      modes: MODES,
      clients: CLIENTS,
    });
  }
  const queue = `bench-wire-${process.pid}`;
  const sessions = new Map<string, WireClient>();
  const key = (client: ClientName, target: Target) => `${client} ${target.name}`;
  for (const target of targets) {
    for (const client of target.clients) {
      const session = await connect(client, target.url);
      await session.declare(queue);
      sessions.set(key(client, target), session);
    }
  }
  const rates = new Map<string, number[]>();
  const row = (client: ClientName, mode: Mode, target: string) => `${client} ${mode} on ${target}`;
  try {
    // A first, untimed round warms up every path.
    for (let round = -1; round < ROUNDS; round++) {
      for (const client of CLIENTS) {
        for (const mode of MODES) {
          for (const target of targets) {
            if (!target.clients.includes(client) || !target.modes.includes(mode)) continue;
            const session = sessions.get(key(client, target))!;
            const messages = round < 0 ? Math.min(5000, target.messages) : target.messages;
            const rate = await measure(session, queue, mode, messages);
            if (round < 0) continue;
            const name = row(client, mode, target.name);
            rates.set(name, [...(rates.get(name) ?? []), rate]);
          }
        }
      }
    }
  } finally {
    for (const session of sessions.values()) {
      await session.delete(queue).catch(() => {});
      await session.close().catch(() => {});
    }
    for (const child of Object.values(children)) await child.stop();
  }

  const results: BenchResult[] = [];
  for (const [name, values] of rates) {
    results.push({
      name,
      opsPerSec: median(values),
      note: `msg/s, median of ${values.length} (${spread(values, kilo)})`,
    });
  }
  // Ratios per round (the two taken in the same minute), then their median.
  const ratio = (client: ClientName, mode: Mode, a: string, b: string, goal: string) => {
    const x = rates.get(row(client, mode, a));
    const y = rates.get(row(client, mode, b));
    if (!x || !y) return;
    const each = x.map((v, i) => v / y[i]!);
    results.push({
      name: `${client} ${mode}: ${a} / ${b} (${goal})`,
      opsPerSec: median(each),
      note: `${times(median(each))}, rounds ${spread(each, times)}`,
    });
  };
  for (const client of CLIENTS) {
    for (const mode of MODES) {
      ratio(client, mode, 'mqlite', 'rabbitmq', 'target ≥ 5×');
      ratio(client, mode, 'mqlite', 'lavinmq', 'target > 1×');
      ratio(client, mode, 'mqlite', 'sink', 'target ≥ 0.70×');
      ratio(client, mode, 'mqlite fs', 'rabbitmq', 'fs storage');
      // What no server can beat with this client: the bound on the ratios to RabbitMQ.
      ratio(client, mode, 'sink', 'rabbitmq', 'the ceiling');
    }
  }
  return results;
}

// --- start -------------------------------------------------------------------------------------

/** Resolves once a client connected to `port` reads the server's first bytes (connection.start). */
function firstAnswer(port: number, retry: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(port, '127.0.0.1', () => socket.write(PROTOCOL_HEADER));
    socket.once('data', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (error) => {
      socket.destroy();
      if (!retry) reject(error);
      else setTimeout(() => firstAnswer(port, retry).then(resolve, reject), 1);
    });
  });
}

async function start(): Promise<BenchResult[]> {
  const mqlite: number[] = [];
  for (let i = 0; i < 21; i++) {
    const t0 = performance.now();
    const broker = await Broker.open();
    const server = await listen(broker);
    await firstAnswer(server.port, false);
    mqlite.push(performance.now() - t0);
    await server.close();
    await broker.close();
  }
  const results: BenchResult[] = [
    {
      name: 'start to first connection.start: mqlite, in the process (target < 20 ms)',
      opsPerSec: median(mqlite),
      note: `ms, median of ${mqlite.length}; first in the process ${mqlite[0]!.toFixed(2)} ms`,
    },
    {
      name: 'start: rabbitmq cold start (prior measurement, not rerun)',
      opsPerSec: RABBIT_COLD_START_MS,
      note: `ms; ${(RABBIT_COLD_START_MS / median(mqlite)).toFixed(0)}× mqlite`,
    },
  ];
  // A smoke run must not restart a LavinMQ that others may be using.
  if (SMOKE) return results;
  // Two LavinMQs cannot run side by side (both bind 5679): the one of the other rows is
  // restarted, and left running, with a fresh data directory.
  const port = LAVINMQ_PORT;
  const script = (name: string) => promisify(execFile)(`${lavinScripts}/${name}`, [String(port)]);
  const lavin: number[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      await script('stop');
      const t0 = performance.now();
      const started = script('start');
      await firstAnswer(port, true);
      lavin.push(performance.now() - t0);
      await started;
    }
    results.push({
      name: 'start: lavinmq, its start script to first connection.start',
      opsPerSec: median(lavin),
      note: `ms, median of ${lavin.length}; ${(median(lavin) / median(mqlite)).toFixed(0)}× mqlite`,
    });
  } catch (error) {
    console.log(`lavinmq start left out: ${(error as Error).message}`);
  }
  return results;
}

// --- small test --------------------------------------------------------------------------------

/**
 * The typical small test over the wire: its own connection, a queue, 10 messages, closed.
 * amqplib leaves Nagle's algorithm on unless told `noDelay`: its handshake's last two writes and
 * its publishes then wait for the server's delayed ACK (40 ms on Linux), whatever the server.
 */
async function smallTest(url: string, queue: string, noDelay: boolean): Promise<void> {
  const connection = await amqplib.connect(url, { noDelay });
  const channel = await connection.createChannel();
  await channel.assertQueue(queue, { exclusive: true, durable: false });
  for (let i = 0; i < 10; i++) channel.sendToQueue(queue, BODY);
  let received = 0;
  await new Promise<void>((resolve, reject) => {
    channel
      .consume(queue, (message) => {
        if (!message) return reject(new Error('consumer cancelled'));
        channel.ack(message);
        if (++received === 10) resolve();
      })
      .catch(reject);
  });
  await connection.close();
}

async function smallTests(): Promise<BenchResult[]> {
  const broker = await Broker.open();
  const server = await listen(broker);
  // The floor: the same client against a server that answers at once (wire/sink.ts).
  const sink = await listenSink();
  const brokers = [
    { name: 'mqlite', url: server.url, tests: 20 },
    { name: 'frame sink', url: `amqp://guest:guest@127.0.0.1:${portOf(sink)}`, tests: 20 },
  ];
  if (await reachable('rabbitmq', rabbitUrl))
    brokers.push({ name: 'rabbitmq', url: rabbitUrl, tests: 5 });
  if (await reachable('lavinmq', lavinUrl))
    brokers.push({ name: 'lavinmq', url: lavinUrl, tests: 5 });
  const variants = [
    { label: 'amqplib defaults', noDelay: false },
    { label: 'amqplib noDelay', noDelay: true },
  ];
  const ms = new Map<string, number[]>();
  const key = (variant: string, target: string) => `${variant} on ${target}`;
  let k = 0;
  try {
    for (let round = -1; round < ROUNDS; round++) {
      for (const { label, noDelay } of variants) {
        for (const target of brokers) {
          const t0 = performance.now();
          for (let i = 0; i < target.tests; i++) {
            await smallTest(target.url, `bench-small-${process.pid}-${k++}`, noDelay);
          }
          if (round < 0) continue;
          const name = key(label, target.name);
          ms.set(name, [...(ms.get(name) ?? []), (performance.now() - t0) / target.tests]);
        }
      }
    }
  } finally {
    await server.close();
    await broker.close();
    await new Promise((resolve) => sink.close(resolve));
  }
  const results: BenchResult[] = [];
  for (const [name, values] of ms) {
    results.push({
      name: `small test (connect, declare, publish 10, consume 10, close), ${name}`,
      opsPerSec: median(values),
      note: `ms per test, median of ${values.length} rounds (${spread(values, (v) => v.toFixed(2))})`,
    });
  }
  const ratio = (label: string, over: string, under: string, suffix = '') => {
    const theirs = ms.get(key(label, over));
    const mine = ms.get(key(label, under))!;
    if (!theirs) return;
    const each = theirs.map((v, i) => v / mine[i]!);
    results.push({
      name: `small test, ${label}: ${over} time / ${under} time${suffix}`,
      opsPerSec: median(each),
      note: `${median(each).toFixed(1)}×, rounds ${spread(each, (v) => v.toFixed(1))}`,
    });
  };
  for (const { label } of variants) {
    ratio(label, 'rabbitmq', 'mqlite', ' (target ≥ 20×)');
    ratio(label, 'lavinmq', 'mqlite');
    // The most any server could show with this client.
    ratio(label, 'rabbitmq', 'frame sink', ' (ceiling)');
    ratio(label, 'mqlite', 'frame sink');
  }
  return results;
}

// --- memory ------------------------------------------------------------------------------------

const IDLE_CONNECTIONS = SMOKE ? 50 : 1000;

/** Opens the idle connections, 50 handshakes at a time; returns them for closing. */
async function idleConnections(url: string, queue: string): Promise<amqplib.ChannelModel[]> {
  const open: amqplib.ChannelModel[] = [];
  for (let i = 0; i < IDLE_CONNECTIONS; i += 50) {
    const batch = Array.from({ length: 50 }, async () => {
      const connection = await amqplib.connect(url);
      const channel = await connection.createChannel();
      await channel.assertQueue(queue, { durable: false });
      await channel.consume(queue, () => {});
      return connection;
    });
    open.push(...(await Promise.all(batch)));
  }
  return open;
}

async function memory(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const queue = `bench-idle-${process.pid}`;
  const child = await spawnServer('memory');
  try {
    const before = await child.usage();
    const open = await idleConnections(child.url, queue);
    const after = await child.usage();
    for (const c of open) await c.close();
    results.push(
      {
        name: `memory per idle connection (channel + consumer) on mqlite: heap + array buffers`,
        opsPerSec: (after.heap - before.heap) / IDLE_CONNECTIONS,
        note: `bytes, ${IDLE_CONNECTIONS} connections, after a full GC`,
      },
      {
        name: `memory per idle connection on mqlite: rss delta`,
        opsPerSec: (after.rss - before.rss) / IDLE_CONNECTIONS,
        note: `bytes`,
      },
    );
  } finally {
    await child.stop();
  }
  const { readFile } = await import('node:fs/promises');
  const pidFile = `${process.env.TMPDIR ?? '/tmp'}/lavinmq-${LAVINMQ_PORT}/pid`;
  const lavinPid = await readFile(pidFile, 'utf8').then(
    (s) => s.trim(),
    () => undefined,
  );
  if (lavinPid && (await reachable('lavinmq', lavinUrl))) {
    const before = await rssOf(lavinPid);
    const open = await idleConnections(lavinUrl, queue);
    const after = await rssOf(lavinPid);
    for (const c of open) await c.close();
    results.push({
      name: 'memory per idle connection on lavinmq: rss delta',
      opsPerSec: (after - before) / IDLE_CONNECTIONS,
      note: 'bytes',
    });
  }
  return results;
}

export const sections = { throughput, start, 'small test': smallTests, memory };

if (isMain(import.meta.url)) {
  const only = process.argv.slice(2);
  for (const [name, section] of Object.entries(sections)) {
    if (only.length > 0 && !only.includes(name)) continue;
    console.log(`## ${name}`);
    printResults(await section());
  }
}
