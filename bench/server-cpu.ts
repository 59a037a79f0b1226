/**
 * The wire server's own CPU per message, beside LavinMQ's and RabbitMQ's, in one run through the
 * same client (amqplib, 100-byte messages). Over loopback the client is the bottleneck of every
 * throughput figure; the server's CPU time (`/proc/<pid>/stat`, utime + stime of all its threads,
 * before and after) tells a leaner server from a busier one, and holds on a loaded machine.
 *
 * - CPU per message: publish (confirms off, and on with 1000 in flight), consume with ack at
 *   prefetch 1000, and a publish through a topic exchange to 10 queues (per message published);
 *   on `mqlite serve` (memory, and fs with `--data`) as a child process, LavinMQ
 *   (`LAVINMQ_PORT`, default 5680; `../shared/lavinmq/start 5680`) and RabbitMQ (`AMQP_URL`).
 *   Rounds take turns across servers; each figure is the median, with the range of the rounds.
 * - Aggregate: 4 publisher and 4 consumer processes, one queue per pair, all at once: messages
 *   consumed a second, and the server's CPU per message under that load (on mqlite, with the
 *   share of the main thread: the rest is V8's garbage-collector and compiler threads).
 * - Memory: the RSS of a server holding 1 M ready 100-byte messages, mqlite (memory) and LavinMQ.
 *
 * A server that does not answer is left out with a message; RabbitMQ's CPU includes whatever
 * else its other users run. Standalone: `node --import tsx bench/server-cpu.ts`; `CPU_ROUNDS`
 * sets the rounds (default 3).
 */
import { execFileSync, fork, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { isMain, LAVINMQ_PORT, printResults, SMOKE, scaled } from './harness.js';
import type { BenchResult } from './types.js';
import { BODY, connect, type WireClient } from './wire/clients.js';
import { rssOf } from './wire/server-process.js';

const rabbitUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const ROUNDS = SMOKE ? 1 : Number(process.env.CPU_ROUNDS ?? 3);
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

interface Server {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  /** The brokers are slower: fewer messages, so a round takes about as long. */
  readonly messages: number;
  /** A Node process, whose main thread runs all of its JavaScript. */
  readonly node?: boolean;
  stop?(): Promise<void>;
}

/** CPU seconds the process has used so far, all threads, user and system. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted from the state (field 3) here.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * CPU seconds of the process's main thread (V8's JavaScript thread on Node), and of all its
 * threads: the rest is the garbage collector's and the compiler's helper threads on Node.
 */
function threadSeconds(pid: number): { main: number; all: number } {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    main: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
    all: cpuSeconds(pid),
  };
}

/** The pid of the process listening on `port` of loopback, from `ss`. */
function listenerPid(port: number): number | undefined {
  try {
    const out = execFileSync('ss', ['-ltnpH', `sport = :${port}`], { encoding: 'utf8' });
    const pid = /pid=(\d+)/.exec(out)?.[1];
    return pid === undefined ? undefined : Number(pid);
  } catch {
    return undefined;
  }
}

/** The newest modification time of a file under `dir`, in ms. */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile())
      newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/**
 * How to run `mqlite serve`: the built package as users run it (`npm run build`), or the
 * sources through tsx when the build is missing or older than them.
 */
function serveCommand(): string[] {
  const built = fileURLToPath(new URL('../dist/cli/bin.js', import.meta.url));
  const src = fileURLToPath(new URL('../src', import.meta.url));
  if (existsSync(built) && statSync(built).mtimeMs >= newestUnder(src)) return [built];
  console.log('dist/ is missing or older than src/: mqlite serve runs through tsx');
  return ['--import', 'tsx', fileURLToPath(new URL('../src/cli/bin.ts', import.meta.url))];
}

/** `mqlite serve` in a child process, on memory or (with `data`) fs storage. */
async function serveMqlite(name: string, data: string | undefined): Promise<Server> {
  const args = [...serveCommand(), 'serve', '--port', '0', '--heartbeat', '0'];
  const child = spawn(process.execPath, [...args, ...(data ? ['--data', data] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      const line = /^(amqp:\S+)\n/m.exec(out);
      if (line) resolve(line[1]!);
    });
    child.once('exit', (code) => reject(new Error(`mqlite serve exited (${code})`)));
  });
  return {
    name,
    url,
    pid: child.pid!,
    messages: scaled(200_000),
    node: true,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      if (data) rmSync(data, { recursive: true, force: true });
    },
  };
}

/** A broker already running at `url`, or undefined with the reason printed. */
async function peer(name: string, url: string, messages: number): Promise<Server | undefined> {
  try {
    await (await amqplib.connect(url)).close();
  } catch (error) {
    console.log(
      `${name} at ${url.replace(/:[^:@/]*@/, ':***@')} left out: ${(error as Error).message}`,
    );
    return undefined;
  }
  const pid = listenerPid(Number(new URL(url).port));
  if (pid === undefined) console.log(`${name} left out: no pid found listening on ${url}`);
  return pid === undefined ? undefined : { name, url, pid, messages };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const micros = (seconds: number) => `${(seconds * 1e6).toFixed(2)} µs`;

// --- CPU per message ----------------------------------------------------------------------------

type Mode = 'publish' | 'publish confirmed' | 'consume' | 'fan-out to 10 queues';
const MODES: readonly Mode[] = ['publish', 'publish confirmed', 'consume', 'fan-out to 10 queues'];
const FANOUT = 10;

/** A server's session: one client, a queue, and a topic exchange bound to 10 queues. */
interface Session {
  readonly client: WireClient;
  readonly connection: amqplib.ChannelModel;
  readonly channel: amqplib.Channel;
  readonly exchange: string;
  readonly queues: string[];
}

async function open(server: Server, prefix: string): Promise<Session> {
  const client = await connect('amqplib', server.url);
  await client.declare(prefix);
  const connection = await amqplib.connect(server.url);
  const channel = await connection.createChannel();
  const exchange = `${prefix}-topic`;
  await channel.assertExchange(exchange, 'topic', { durable: false });
  const queues = Array.from({ length: FANOUT }, (_, i) => `${prefix}-fan-${i}`);
  for (const queue of queues) {
    await channel.assertQueue(queue, { durable: false });
    await channel.bindQueue(queue, exchange, 'bench.*.cpu');
  }
  return { client, connection, channel, exchange, queues };
}

async function close(session: Session, prefix: string): Promise<void> {
  for (const queue of session.queues) await session.channel.deleteQueue(queue);
  await session.channel.deleteExchange(session.exchange);
  await session.connection.close();
  await session.client.delete(prefix);
  await session.client.close();
}

/** Publishes `n` through the topic exchange and waits until every queue holds them. */
async function fanOut(session: Session, n: number): Promise<void> {
  const { channel, exchange, queues } = session;
  for (let i = 0; i < n; i++) {
    if (!channel.publish(exchange, 'bench.fan.cpu', BODY)) {
      await new Promise((resolve) => channel.once('drain', resolve));
    }
  }
  for (const queue of queues) {
    while ((await channel.checkQueue(queue)).messageCount < n) {}
  }
}

/** Server CPU seconds per message of one measurement; fills and empties queues untimed. */
async function measure(server: Server, session: Session, queue: string, mode: Mode, n: number) {
  const { client } = session;
  if (mode === 'consume') await client.publish(queue, n, true);
  const before = cpuSeconds(server.pid);
  if (mode === 'consume') await client.consume(queue, n);
  else if (mode === 'fan-out to 10 queues') await fanOut(session, n);
  else await client.publish(queue, n, mode === 'publish confirmed');
  const cpu = cpuSeconds(server.pid) - before;
  if (mode === 'fan-out to 10 queues') {
    for (const q of session.queues) await session.channel.purgeQueue(q);
  } else await client.purge(queue);
  return cpu / n;
}

async function cpuPerMessage(servers: readonly Server[]): Promise<BenchResult[]> {
  const prefix = `bench-cpu-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const sessions = new Map<Server, Session>();
  for (const server of servers) sessions.set(server, await open(server, prefix));
  const figures = new Map<string, number[]>();
  const key = (mode: Mode, server: Server) => `${mode}: ${server.name}`;
  try {
    // A first round, shorter and not counted, warms up every path.
    for (let round = -1; round < ROUNDS; round++) {
      for (const mode of MODES) {
        for (const server of servers) {
          const full =
            mode === 'fan-out to 10 queues' ? Math.ceil(server.messages / 4) : server.messages;
          const n = round < 0 ? Math.ceil(full / 4) : full;
          const cpu = await measure(server, sessions.get(server)!, prefix, mode, n);
          if (round >= 0)
            figures.set(key(mode, server), [...(figures.get(key(mode, server)) ?? []), cpu]);
        }
      }
    }
  } finally {
    for (const session of sessions.values()) await close(session, prefix).catch(() => {});
  }
  const results: BenchResult[] = [];
  for (const mode of MODES) {
    const lavin = servers.find((s) => s.name === 'lavinmq');
    for (const server of servers) {
      const values = figures.get(key(mode, server))!;
      const mid = median(values);
      const base = lavin && figures.get(key(mode, lavin));
      const ratio =
        base && median(base) > 0 ? `, ${(mid / median(base)).toFixed(2)}× lavinmq's` : '';
      results.push({
        name: `server CPU per message, ${mode}: ${server.name}`,
        // 0 CPU (too few messages for /proc's 10 ms ticks, as in a smoke run) is no rate at all.
        opsPerSec: mid > 0 ? 1 / mid : 0,
        unit: 'time',
        note: `${micros(mid)} median of ${values.length} (${micros(Math.min(...values))}–${micros(Math.max(...values))})${ratio}`,
      });
    }
  }
  return results;
}

// --- aggregate ----------------------------------------------------------------------------------

const PAIRS = 4;

/** 4 publisher and 4 consumer processes at once: messages consumed a second, server CPU. */
async function aggregate(
  server: Server,
): Promise<{ rate: number; cpu: number; mainThread: number }> {
  const prefix = `bench-load-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const n = server.messages / 2;
  const connection = await amqplib.connect(server.url);
  const channel = await connection.createChannel();
  const queues = Array.from({ length: PAIRS }, (_, i) => `${prefix}-${i}`);
  for (const queue of queues) await channel.assertQueue(queue, { durable: false });
  const worker = fileURLToPath(new URL('wire/load-worker.ts', import.meta.url));
  const start = (role: string, queue: string) => {
    const child = fork(worker, [role, server.url, queue, String(n)], {
      execArgv: ['--import', 'tsx'],
    });
    const exited = new Promise<void>((resolve, reject) =>
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`${role} worker exited (${code})`)),
      ),
    );
    // Its messages: 'ready' once connected, 'done' once finished.
    const said = (what: string) =>
      new Promise<void>((resolve) => child.on('message', (m) => m === what && resolve()));
    return { child, ready: said('ready'), done: said('done'), exited };
  };
  const workers = queues.flatMap((q) => [start('consume', q), start('publish', q)]);
  try {
    await Promise.all(workers.map((w) => w.ready));
    const done = workers.filter((_, i) => i % 2 === 0).map((w) => w.done);
    const cpu0 = threadSeconds(server.pid);
    const t0 = performance.now();
    for (const w of workers) w.child.send('go');
    await Promise.all(done);
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = threadSeconds(server.pid);
    await Promise.all(workers.map((w) => w.exited));
    const messages = n * PAIRS;
    return {
      rate: messages / seconds,
      cpu: (cpu1.all - cpu0.all) / messages,
      mainThread: (cpu1.main - cpu0.main) / messages,
    };
  } finally {
    for (const w of workers) w.child.kill();
    for (const queue of queues) await channel.deleteQueue(queue);
    await connection.close();
  }
}

async function aggregates(servers: readonly Server[]): Promise<BenchResult[]> {
  const rates = new Map<Server, { rate: number; cpu: number; mainThread: number }[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const server of servers)
      rates.set(server, [...(rates.get(server) ?? []), await aggregate(server)]);
  }
  const kilo = (v: number) => `${(v / 1000).toFixed(1)} k`;
  return servers.map((server) => {
    const each = rates.get(server)!;
    const rate = median(each.map((e) => e.rate));
    const cpu = median(each.map((e) => e.cpu));
    const mainThread = median(each.map((e) => e.mainThread));
    return {
      name: `aggregate, ${PAIRS} publisher + ${PAIRS} consumer processes: ${server.name}`,
      opsPerSec: rate,
      note: `msg/s consumed, median of ${each.length} (${kilo(Math.min(...each.map((e) => e.rate)))}–${kilo(Math.max(...each.map((e) => e.rate)))}); server CPU ${micros(cpu)}/msg${server.node ? `, ${micros(mainThread)} of it on the main thread` : ''}`,
    };
  });
}

// --- memory -------------------------------------------------------------------------------------

/** RSS of the server before and once it holds `n` ready 100-byte messages in one queue. */
async function memoryHolding(server: Server, n: number): Promise<BenchResult> {
  const queue = `bench-rss-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const client = await connect('amqplib', server.url);
  await client.declare(queue);
  const before = await rssOf(String(server.pid));
  await client.publish(queue, n, true);
  const after = await rssOf(String(server.pid));
  await client.delete(queue);
  await client.close();
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  return {
    name: `RSS holding ${n} ready 100-byte messages: ${server.name}`,
    opsPerSec: after,
    unit: 'bytes',
    note: `${mib(after)} (${mib(before)} before; ${((after - before) / n).toFixed(0)} B a message)`,
  };
}

export async function run(): Promise<BenchResult[]> {
  const memory = await serveMqlite('mqlite', undefined);
  const fs = await serveMqlite('mqlite fs', mkdtempSync(path.join(os.tmpdir(), 'mqlite-cpu-')));
  const lavin = await peer(
    'lavinmq',
    `amqp://guest:guest@127.0.0.1:${LAVINMQ_PORT}`,
    scaled(200_000),
  );
  const rabbit = await peer('rabbitmq', rabbitUrl, scaled(20_000));
  const peers = [lavin, rabbit].filter((s) => s !== undefined);
  try {
    const results = await cpuPerMessage([memory, fs, ...peers]);
    results.push(...(await aggregates([memory, ...peers])));
    const held = scaled(1_000_000);
    // A server of its own: the one measured above keeps the heap its rounds grew, which the
    // messages then fill without the RSS moving.
    const fresh = await serveMqlite('mqlite', undefined);
    try {
      results.push(await memoryHolding(fresh, held));
    } finally {
      await fresh.stop!();
    }
    if (lavin) results.push(await memoryHolding(lavin, held));
    return results;
  } finally {
    await memory.stop!();
    await fs.stop!();
  }
}

if (isMain(import.meta.url)) printResults(await run());
