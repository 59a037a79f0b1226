/**
 * Services in other languages work unchanged against the server: a Python service on pika and a
 * Go service on amqp091-go (test/server/languages/) run against mqlite's server and the local
 * RabbitMQ, and what each prints of what it saw (every header value with the type its client
 * decoded it to) must be the same on both. Headers cross languages too: amqplib to Python and
 * Go, Python and Go to a Node reader of raw frames, Go to Python.
 *
 * A language whose runtime or client library is missing is skipped, with the reason in the name
 * of its tests: `python3` with pika (Debian `python3-pika`; or the one `PYTHON` names),
 * `go` with amqp091-go's source in a GOPATH (Debian `golang-go` and
 * `golang-github-rabbitmq-amqp091-go-dev`; `AMQP091_GOPATH`, default /usr/share/gocode).
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import amqplib from 'amqplib';
import { afterAll, describe, expect, test } from 'vitest';
import { onlyMqlite, rabbitUrl, servedBroker } from './served.js';
import { published, publishedTags, publishTyped, receiveTyped } from './typed-headers.js';

const run = promisify(execFile);
const languages = path.join(path.dirname(fileURLToPath(import.meta.url)), 'languages');
/** A limit for a hang: a worker takes about a second, much longer on a loaded machine. */
const WORKER_TIMEOUT_MS = 90_000;
/** A test runs up to four workers, the first Go one after building it. */
const TEST_TIMEOUT = { timeout: 400_000 };

/** The first interpreter that imports pika, or why there is none. */
function findPython(): { python?: string; missing?: string } {
  const candidates = process.env.PYTHON ? [process.env.PYTHON] : ['python3', '/usr/bin/python3'];
  for (const python of candidates) {
    const imports = spawnSync(python, ['-c', 'import pika'], { stdio: 'ignore' }).status === 0;
    if (imports) return { python };
  }
  return { missing: `no ${candidates.join(' or ')} imports pika (apt-get install python3-pika)` };
}

const gopath = process.env.AMQP091_GOPATH ?? '/usr/share/gocode';

/** Why the Go worker cannot be built, if it cannot. */
function goMissing(): string | undefined {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
    return 'no go on PATH (apt-get install golang-go)';
  }
  if (!fs.existsSync(path.join(gopath, 'src/github.com/rabbitmq/amqp091-go'))) {
    return `no amqp091-go in ${gopath} (apt-get install golang-github-rabbitmq-amqp091-go-dev)`;
  }
  return undefined;
}

const { python, missing: pythonMissing } = findPython();
const goUnavailable = goMissing();
for (const reason of [pythonMissing, goUnavailable]) {
  if (reason) console.warn(`other-languages: skipped, ${reason}`);
}

/** A describe name, with why it is skipped when it is. */
function titled(title: string, ...missing: (string | undefined)[]): string {
  const reasons = missing.filter(Boolean);
  return reasons.length === 0 ? title : `${title} (skipped: ${reasons.join('; ')})`;
}

/** Where the Go worker is built, once a test needs it. */
let scratch: string | undefined;
let goBuild: Promise<string> | undefined;

/** Builds the Go worker once for the file, from the packaged source only (no module download). */
function goWorker(): Promise<string> {
  goBuild ??= (async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'mqlite-languages-'));
    const binary = path.join(scratch, 'worker');
    await run('go', ['build', '-o', binary, 'worker.go'], {
      cwd: languages,
      timeout: 300_000,
      env: {
        ...process.env,
        GO111MODULE: 'off',
        GOPATH: gopath,
        GOFLAGS: '',
        GOPROXY: 'off',
        GOCACHE: process.env.GOCACHE ?? path.join(os.tmpdir(), 'mqlite-go-cache'),
      },
    });
    return binary;
  })();
  return goBuild;
}

/** A service: runs one mode of its worker against `url` on `queue` and returns what it printed. */
type Service = (
  mode: 'scenario' | 'publish' | 'consume',
  url: string,
  queue: string,
) => Promise<unknown>;

/** A value as a worker prints it: the name of its type in the worker's language, and itself. */
interface Typed {
  readonly type: string;
  readonly value: unknown;
}

/** A delivery as a worker prints it (`consume` prints one). */
interface Delivery {
  readonly body: string;
  readonly messageCount?: number;
  readonly properties: {
    readonly priority: number;
    readonly correlationId: string;
    readonly expiration: string | null;
    readonly headers: Readonly<Record<string, Typed>>;
  };
}

interface Counts {
  readonly messages: number;
  readonly consumers: number;
}

/** What a worker's `scenario` prints. */
interface Summary {
  readonly afterPublish: Counts;
  readonly whileConsuming: Counts;
  readonly consumed: readonly Delivery[];
  readonly got: Delivery;
  readonly afterGet: Counts;
  readonly deadLetter: Delivery;
  readonly afterDeadLetter: Counts;
  readonly returned?: number;
}

async function runWorker(
  command: string,
  args: string[],
  url: string,
  queue: string,
): Promise<unknown> {
  try {
    const { stdout } = await run(command, args, {
      env: { ...process.env, AMQP_URL: url, QUEUE: queue },
      timeout: WORKER_TIMEOUT_MS,
    });
    return JSON.parse(stdout);
  } catch (e) {
    const { stderr } = e as { stderr?: string };
    throw new Error(`${command} ${args.join(' ')} against ${url} failed: ${stderr ?? e}`);
  }
}

const pythonService: Service = (mode, url, queue) =>
  runWorker(python!, [path.join(languages, 'worker.py'), mode], url, queue);
const goService: Service = async (mode, url, queue) =>
  runWorker(await goWorker(), [mode], url, queue);

const served = servedBroker();
const rabbitPort = Number(new URL(rabbitUrl).port || 5672);
/** What the tests declared on RabbitMQ, deleted after them. */
const rabbitQueues: string[] = [];
const rabbitExchanges: string[] = [];

afterAll(async () => {
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  if (onlyMqlite || rabbitQueues.length + rabbitExchanges.length === 0) return;
  const connection = await amqplib.connect(rabbitUrl);
  const ch = await connection.createChannel();
  for (const queue of rabbitQueues) await ch.deleteQueue(queue);
  for (const exchange of rabbitExchanges) await ch.deleteExchange(exchange);
  await connection.close();
});

/** A throwaway name, used on both brokers. */
function fresh(what: string): string {
  return `mqlite-${what}-${randomBytes(4).toString('hex')}`;
}

/**
 * Runs `scenario` against mqlite's server, then RabbitMQ (unless `PARITY_TARGETS=mqlite`), and
 * expects both to see the same; returns what mqlite's server showed.
 */
async function sameOnBoth<T>(scenario: (url: string, port: number) => Promise<T>): Promise<T> {
  const mqlite = await scenario(served.server.url, served.server.port);
  if (!onlyMqlite) expect(mqlite).toEqual(await scenario(rabbitUrl, rabbitPort));
  return mqlite;
}

/** Runs a service's whole scenario (its names are deleted by the service and again after). */
async function scenarioOf(service: Service): Promise<Summary> {
  const prefix = fresh('service');
  rabbitQueues.push(`${prefix}-work`, `${prefix}-dead`);
  rabbitExchanges.push(`${prefix}-dlx`);
  return (await sameOnBoth((url) => service('scenario', url, prefix))) as Summary;
}

/** Publishes `headers` from amqplib and returns what the service consumed of them. */
async function fromAmqplib(service: Service, headers: object): Promise<Delivery> {
  const queue = fresh('from-node');
  rabbitQueues.push(queue);
  return (await sameOnBoth(async (url) => {
    await publishTyped(url, queue, false, headers);
    return service('consume', url, queue);
  })) as Delivery;
}

/** The service publishes its headers; a Node reader of raw frames returns them with their tags. */
function toNode(service: Service): Promise<unknown[]> {
  const queue = fresh('to-node');
  rabbitQueues.push(queue);
  return sameOnBoth(async (url, port) => {
    await service('publish', url, queue);
    return receiveTyped(port, queue);
  });
}

/** The scenario's outcome, the same for either language: order, settlement, counts. */
function expectScenario(summary: Summary, longType: string): void {
  expect(summary.afterPublish).toEqual({ messages: 3, consumers: 0 });
  expect(summary.whileConsuming).toEqual({ messages: 1, consumers: 1 });
  // Highest priority first; the rejected one is the dead letter, the last one is got.
  expect(summary.consumed.map((d) => d.properties.priority)).toEqual([9, 5]);
  expect(summary.got.properties.priority).toBe(1);
  expect(summary.got.messageCount).toBe(0);
  expect(summary.afterGet).toEqual({ messages: 0, consumers: 0 });
  const dead = summary.deadLetter.properties;
  expect(dead.correlationId).toBe('corr-mid');
  expect(dead.headers['x-death']?.value).toMatchObject([
    {
      value: {
        reason: { value: 'rejected' },
        count: { type: longType, value: 1 },
        'original-expiration': { value: '600000' },
      },
    },
  ]);
  expect(summary.afterDeadLetter).toEqual({ messages: 0, consumers: 0 });
}

/** The unsigned short and int: amqp091-go cannot read them (the connection fails), nor sends them. */
const goUnreadable = (key: string) => key === 'unsignedShort' || key === 'unsignedInt';

describe.skipIf(!python)(titled('a pika service', pythonMissing), TEST_TIMEOUT, () => {
  test('sees the same on mqlite as on RabbitMQ: priorities, prefetch, ack, dead letter, get, counts', async () => {
    const summary = await scenarioOf(pythonService);
    expectScenario(summary, 'long');
    const [first] = summary.consumed;
    const headers = first!.properties.headers;
    expect(headers.long).toEqual({ type: 'long', value: 2 ** 40 });
    expect(headers.decimal).toEqual({ type: 'Decimal', value: '123.45' });
    expect(headers.timestamp).toEqual({ type: 'datetime', value: '2023-11-14T22:13:20' });
    expect(first!.properties.expiration).toBe('600000');
    expect(summary.deadLetter.properties.expiration).toBeNull();
  });

  test('reads the headers amqplib published with the types pika gives them', async () => {
    const headers = (await fromAmqplib(pythonService, published)).properties.headers;
    expect(headers.decimal).toEqual({ type: 'Decimal', value: '123.45' });
    expect(headers.unsignedInt).toEqual({ type: 'int', value: 4000000000 });
    expect(headers.nested).toMatchObject({ value: { inner: { type: 'int', value: 9 } } });
  });

  test('publishes headers that reach a Node reader with their AMQP tags', async () => {
    expect(await toNode(pythonService)).toEqual([
      ['bytes', 'x:0001ff'],
      ['decimal', 'D:2/12345'],
      ['flag', 't:true'],
      ['int', 'I:100000'],
      ['list', ['A', ['I:1', 'S:two', ['A', ['I:3']], ['F', [['k', 'S:v']]]]]],
      ['long', `l:${2 ** 40}`],
      ['negative', 'I:-7'],
      [
        'nested',
        [
          'F',
          [
            ['deeper', ['F', [['last', 't:false']]]],
            ['inner', 'I:9'],
          ],
        ],
      ],
      ['text', 'S:ünïcode'],
      ['timestamp', 'T:1700000000'],
      ['void', 'V:null'],
    ]);
  });
});

describe.skipIf(Boolean(goUnavailable))(
  titled('an amqp091-go service', goUnavailable),
  TEST_TIMEOUT,
  () => {
    test('sees the same on mqlite as on RabbitMQ: priorities, prefetch, ack, dead letter, get, counts', async () => {
      const summary = await scenarioOf(goService);
      expectScenario(summary, 'int64');
      expect(summary.returned).toBe(0);
      const headers = summary.consumed[0]!.properties.headers;
      expect(headers.short).toEqual({ type: 'int16', value: -300 });
      expect(headers.float).toEqual({ type: 'float32', value: 1.5 });
      expect(summary.deadLetter.properties.expiration).toBe('');
    });

    test('reads the headers amqplib published with the types amqp091-go gives them', async () => {
      const headers = (
        await fromAmqplib(
          goService,
          Object.fromEntries(Object.entries(published).filter(([key]) => !goUnreadable(key))),
        )
      ).properties.headers;
      expect(headers.byte).toEqual({ type: 'int8', value: -5 });
      expect(headers.unsignedByte).toEqual({ type: 'uint8', value: 200 });
      expect(headers.float).toEqual({ type: 'float32', value: 1.5 });
      expect(headers.decimal).toEqual({
        type: 'amqp091.Decimal',
        value: { scale: 2, value: 12345 },
      });
      expect(headers.wideLong).toEqual({ type: 'int64', value: 2 ** 40 });
    });

    test('publishes headers that reach a Node reader with their AMQP tags', async () => {
      // The Go service publishes amqplib's table but those two: the same tags arrive.
      const expected = publishedTags.filter(([key]) => !goUnreadable(key));
      expect(await toNode(goService)).toEqual(expected);
    });
  },
);

describe.skipIf(!python || Boolean(goUnavailable))(
  titled('a Go publisher and a Python consumer', pythonMissing, goUnavailable),
  TEST_TIMEOUT,
  () => {
    test('the Python consumer reads what the Go service published alike on both brokers', async () => {
      const queue = fresh('go-to-python');
      rabbitQueues.push(queue);
      const delivery = (await sameOnBoth(async (url) => {
        await goService('publish', url, queue);
        return pythonService('consume', url, queue);
      })) as Delivery;
      expect(delivery.body).toBe('typed');
      const headers = delivery.properties.headers;
      expect(headers.short).toEqual({ type: 'int', value: -300 });
      expect(headers.decimal).toEqual({ type: 'Decimal', value: '123.45' });
      expect(headers.list?.value).toMatchObject({ 3: { value: [{ type: 'int', value: 4 }] } });
    });
  },
);
