/**
 * RabbitMQ's own `rabbitmqadmin`, fetched from the running management plugin at test time (it is
 * not shipped here), listing, declaring, publishing, getting and purging against mqlite.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { managedBroker, RABBIT_API } from './served.js';

const run = promisify(execFile);
const managed = managedBroker();

/** The script, or why there is none. */
async function fetchScript(): Promise<string | { reason: string }> {
  try {
    const response = await fetch(`${RABBIT_API}/cli/rabbitmqadmin`, {
      signal: AbortSignal.timeout(5_000),
    });
    if (!response.ok)
      return { reason: `${RABBIT_API}/cli/rabbitmqadmin answered ${response.status}` };
    return await response.text();
  } catch (error) {
    return { reason: `RabbitMQ management does not answer at ${RABBIT_API}: ${String(error)}` };
  }
}

async function hasPython(): Promise<boolean> {
  try {
    await run('python3', ['--version']);
    return true;
  } catch {
    return false;
  }
}

const script = await fetchScript();
const python = await hasPython();
const unavailable =
  typeof script !== 'string' ? script.reason : python ? undefined : 'python3 is not installed';
const dir = await mkdtemp(path.join(tmpdir(), 'rabbitmqadmin-'));
const file = path.join(dir, 'rabbitmqadmin');
if (typeof script === 'string') await writeFile(file, script);

afterAll(() => rm(dir, { recursive: true, force: true }));

describe('rabbitmqadmin against mqlite', () => {
  const admin = async (...args: string[]) => {
    const port = new URL(managed.server.managementUrl!).port;
    const { stdout } = await run('python3', [file, '-H', '127.0.0.1', '-P', port, ...args], {
      timeout: 60_000,
    });
    return stdout;
  };

  it.skipIf(unavailable !== undefined)('declares, publishes, lists, gets and purges', async () => {
    await admin('declare', 'queue', 'name=admin-q', 'durable=false');
    await admin('declare', 'exchange', 'name=admin-x', 'type=fanout');
    await admin('declare', 'binding', 'source=admin-x', 'destination=admin-q');
    expect(
      await admin('publish', 'exchange=admin-x', 'routing_key=any', 'payload=hello'),
    ).toContain('Message published');
    await admin('publish', 'exchange=amq.default', 'routing_key=admin-q', 'payload=second');
    const queues = JSON.parse(await admin('-f', 'raw_json', 'list', 'queues'));
    expect(queues).toEqual([expect.objectContaining({ name: 'admin-q', messages: 2 })]);
    const exchanges = JSON.parse(await admin('-f', 'raw_json', 'list', 'exchanges'));
    expect(exchanges.map((e: { name: string }) => e.name)).toContain('admin-x');
    const bindings = JSON.parse(await admin('-f', 'raw_json', 'list', 'bindings'));
    expect(bindings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ source: 'admin-x', destination: 'admin-q' }),
      ]),
    );
    expect(await admin('get', 'queue=admin-q', 'ackmode=ack_requeue_true')).toContain('hello');
    expect(await admin('list', 'queues', 'name', 'messages')).toMatch(/admin-q\s*\|\s*2/);
    await admin('purge', 'queue', 'name=admin-q');
    expect(JSON.parse(await admin('-f', 'raw_json', 'list', 'queues'))[0].messages).toBe(0);
    await admin('delete', 'queue', 'name=admin-q');
    expect(JSON.parse(await admin('-f', 'raw_json', 'list', 'queues'))).toEqual([]);
  });

  if (unavailable !== undefined) it.skip(`needs rabbitmqadmin: ${unavailable}`, () => {});
});
