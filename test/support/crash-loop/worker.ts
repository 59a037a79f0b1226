/**
 * The crash loop's worker: opens a broker on a data directory and works its queues until
 * killed, printing (see `WorkerLine`) every publish it starts and every one that resolved, and
 * every ack before it is made.
 *
 * Usage: node worker.mjs <dir> <always|interval> <seed> <run>
 */
import { writeSync } from 'node:fs';
import { Broker } from '../../../src/broker/broker.js';
import type { Message } from '../../../src/message/message.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import {
  ACKED_QUEUES,
  bodyOf,
  fsyncOf,
  idOf,
  idOfBody,
  LVQ_KEYS,
  type PolicyName,
  QUEUE_NAMES,
  QUEUES,
  type QueueName,
  READER,
  random,
  SCRATCH,
} from './workload.js';

const [dir, policy, seedArg, runArg] = process.argv.slice(2) as [
  string,
  PolicyName,
  string,
  string,
];
const run = Number(runArg);
const rand = random(Number(seedArg) * 7919 + run);
const print = (text: string) => writeSync(1, text);

const broker = await Broker.open({ storage: fsStorage({ dir, fsync: fsyncOf(policy) }) });
const queues = Object.fromEntries(
  await Promise.all(
    QUEUE_NAMES.map(async (name) => [name, await broker.queue(name, QUEUES[name])]),
  ),
) as Record<QueueName, Awaited<ReturnType<typeof broker.queue>>>;

/** Acks are printed, in one write, before they are made. */
function acker(label: (m: Message) => string) {
  let batch: Message[] = [];
  const flush = () => {
    const taken = batch;
    batch = [];
    print(taken.map((m) => `A ${label(m)}\n`).join(''));
    for (const m of taken) void m.ack();
  };
  return (m: Message) => {
    if (batch.length === 0) queueMicrotask(flush);
    batch.push(m);
  };
}

for (const name of ACKED_QUEUES) {
  await queues[name].subscribe(
    { manualAck: true, prefetch: 64 },
    acker((m) => `${name} ${idOfBody(name, m.bodyString())}`),
  );
}
await queues.stream.subscribe(
  { tag: READER, manualAck: true, prefetch: 256 },
  acker((m) => `stream ${m.properties.headers?.['x-stream-offset']}`),
);
print('R\n');

/**
 * Declares or deletes a scratch queue of a random kind (never published to), printing `Q` lines
 * around it: kills land in declares and deletes too.
 */
let structural = false;
function declareOrDelete(): void {
  const kind = QUEUE_NAMES[Math.floor(rand() * QUEUE_NAMES.length)]!;
  const name = `${SCRATCH}${kind}`;
  const exists = broker.queues().some((q) => q.name === name);
  structural = true;
  print(`Q ${exists ? 'delete' : 'declare'} ${name}\n`);
  const done = exists ? broker.deleteQueue(name) : broker.queue(name, QUEUES[kind]);
  void done.then(() => {
    print(`Q done ${name}\n`);
    structural = false;
  });
}

let seq = 0;
const inFlight: Promise<void>[] = [];
for (;;) {
  if (!structural && rand() < 0.02) declareOrDelete();
  const name = QUEUE_NAMES[Math.floor(rand() * QUEUE_NAMES.length)]!;
  const count = 1 + Math.floor(rand() * 16);
  const first = idOf(run, seq + 1);
  seq += count;
  print(`S ${name} ${first} ${first + count - 1}\n`);
  const published: Promise<string>[] = [];
  for (let id = first; id < first + count; id++) {
    const key = name === 'lvq' ? `key${Math.floor(rand() * LVQ_KEYS)}` : undefined;
    const priority = name === 'prio' ? Math.floor(rand() * 6) : undefined;
    const properties =
      key !== undefined ? { headers: { k: key } } : priority !== undefined ? { priority } : {};
    published.push(
      queues[name]
        .publish(bodyOf(name, id), properties)
        .then(() => `P ${name} ${id}${key === undefined ? '' : ` ${key}`}\n`),
    );
  }
  inFlight.push(Promise.all(published).then((lines) => void print(lines.join(''))));
  if (inFlight.length > 4) await inFlight.shift();
  await new Promise((resolve) => setImmediate(resolve));
}
