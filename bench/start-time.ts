/**
 * How long a test waits for its broker: from starting it to the first amqplib connection it
 * accepts. mqlite: `startBroker()` in this process. RabbitMQ: a fresh node of the installed
 * `rabbitmq-server` (its own port, node name and empty data directory, no plugins), the part of
 * a testcontainers start that is RabbitMQ's own; a container adds the image pull and Docker's
 * start on top. The RabbitMQ part needs `rabbitmq-server` on the PATH and is left out of a smoke
 * run (one start takes seconds).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqplib from 'amqplib';
import { startBroker } from '../src/testing/server/index.js';
import { isMain, printResults, SMOKE, scaled } from './harness.js';
import type { BenchResult } from './types.js';

const MQLITE_STARTS = scaled(21);
const RABBITMQ_STARTS = 5;
const RABBITMQ_PORT = 5699;

const median = (times: number[]) => times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;

async function mqliteStart(): Promise<number> {
  const start = performance.now();
  const broker = await startBroker();
  const connection = await amqplib.connect(broker.getAmqpUrl());
  const took = performance.now() - start;
  await connection.close();
  await broker.stop();
  return took;
}

/** Starts a fresh RabbitMQ node, times its first accepted connection, and stops it. */
async function rabbitmqStart(round: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'mqlite-bench-rabbit-'));
  // The node runs as the rabbitmq user, which must write there.
  spawnSync('chmod', ['777', dir]);
  writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
  writeFileSync(join(dir, 'rabbitmq.conf'), `listeners.tcp.local = 127.0.0.1:${RABBITMQ_PORT}\n`);
  const node = `mqlite-bench-${process.pid}-${round}@localhost`;
  const env = {
    ...process.env,
    RABBITMQ_NODENAME: node,
    RABBITMQ_DIST_PORT: String(RABBITMQ_PORT + 20_000),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_PID_FILE: join(dir, 'pid'),
  };
  const start = performance.now();
  const server = spawn('rabbitmq-server', [], { env, stdio: 'ignore' });
  const exited = new Promise((resolve) => server.once('exit', resolve));
  try {
    for (;;) {
      try {
        await (await amqplib.connect(`amqp://guest:guest@127.0.0.1:${RABBITMQ_PORT}`)).close();
        return performance.now() - start;
      } catch {
        if (performance.now() - start > 180_000) throw new Error('RabbitMQ did not start');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  } finally {
    spawnSync('rabbitmqctl', ['-n', node, 'stop'], { env, stdio: 'ignore' });
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchResult[]> {
  const mqlite: number[] = [];
  for (let i = 0; i < MQLITE_STARTS; i++) mqlite.push(await mqliteStart());
  const mqliteMs = median(mqlite);
  const results: BenchResult[] = [
    {
      name: 'mqlite startBroker() to first amqplib connection',
      opsPerSec: 1000 / mqliteMs,
      unit: 'time',
      note: `median of ${MQLITE_STARTS}: ${mqliteMs.toFixed(0)} ms`,
    },
  ];
  const hasRabbit = spawnSync('which', ['rabbitmq-server']).status === 0;
  if (SMOKE || !hasRabbit) return results;
  const rabbit: number[] = [];
  for (let i = 0; i < RABBITMQ_STARTS; i++) rabbit.push(await rabbitmqStart(i));
  const rabbitMs = median(rabbit);
  results.push({
    name: 'fresh RabbitMQ node to first amqplib connection',
    opsPerSec: 1000 / rabbitMs,
    unit: 'time',
    note: `median of ${RABBITMQ_STARTS}: ${(rabbitMs / 1000).toFixed(1)} s, ${(rabbitMs / mqliteMs).toFixed(0)}x mqlite's`,
  });
  return results;
}

if (isMain(import.meta.url)) printResults(await run());
