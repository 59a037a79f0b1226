/**
 * The crash loop's worker: opens a broker on a data directory and works its five queues, a
 * delayed exchange and the quorum queue's dead letters until killed, printing (see `WorkerLine`)
 * every publish it starts and every one that resolved, every ack and every settlement that
 * dead-letters before it is made, and a delayed message delivered early.
 *
 * Usage: node worker.mjs <dir> <always|interval> <seed> <run>
 */
import { writeSync } from 'node:fs';
import { Broker } from '../../../src/broker/broker.js';
import type { Message } from '../../../src/message/message.js';
import { fsStorage } from '../../../src/storage/fs/index.js';
import {
  bodyOf,
  DELAYED,
  DELAYED_DECLARATION,
  fsyncOf,
  idOf,
  idOfBody,
  LVQ_KEYS,
  MAX_DELAY_MS,
  type PolicyName,
  QUEUE_NAMES,
  QUEUES,
  QUORUM_DEAD,
  QUORUM_DELIVERY_LIMIT,
  QUORUM_DLX,
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
// The quorum queue's dead-letter target, before the queue: its dead letters route from the start.
await broker.exchange(QUORUM_DLX, 'fanout', { durable: true });
const dead = await broker.queue(QUORUM_DEAD, { durable: true });
await dead.bind(QUORUM_DLX);
const queues = Object.fromEntries(
  await Promise.all(
    QUEUE_NAMES.map(async (name) => [name, await broker.queue(name, QUEUES[name])]),
  ),
) as Record<QueueName, Awaited<ReturnType<typeof broker.queue>>>;

/**
 * Acks (or another settlement, `settle`) are printed, in one write, before they are made:
 * `<kind> <label>` lines.
 */
function acker(
  label: (m: Message) => string,
  kind = 'A',
  settle = (m: Message): Promise<void> => m.ack(),
) {
  let batch: Message[] = [];
  const flush = () => {
    const taken = batch;
    batch = [];
    print(taken.map((m) => `${kind} ${label(m)}\n`).join(''));
    for (const m of taken) void settle(m);
  };
  return (m: Message) => {
    if (batch.length === 0) queueMicrotask(flush);
    batch.push(m);
  };
}

for (const name of ['classic', 'prio'] as const) {
  await queues[name].subscribe(
    { manualAck: true, prefetch: 64 },
    acker((m) => `${name} ${idOfBody(name, m.bodyString())}`),
  );
}
/**
 * The quorum queue's deliveries are never acked: even ids are rejected, odd ones requeued until
 * the delivery limit dead-letters them. `D` lines, printed before, name each that dead-letters.
 */
const quorumId = (m: Message) => idOfBody('quorum', m.bodyString()) ?? 0;
const deadLetter = acker(
  (m) => `quorum ${quorumId(m)}`,
  'D',
  (m) => (quorumId(m) % 2 === 0 ? m.reject(false) : m.nack(true)),
);
await queues.quorum.subscribe({ manualAck: true, prefetch: 32 }, (m) => {
  const earlier = Number(m.properties.headers?.['x-delivery-count'] ?? 0);
  if (quorumId(m) % 2 === 0 || earlier + 1 > QUORUM_DELIVERY_LIMIT) deadLetter(m);
  else void m.nack(true);
});
await dead.subscribe(
  { manualAck: true, prefetch: 16 },
  acker((m) => `${QUORUM_DEAD} ${idOfBody('quorum', m.bodyString())}`),
);
await queues.stream.subscribe(
  { tag: READER, manualAck: true, prefetch: 256 },
  acker((m) => `stream ${m.properties.headers?.['x-stream-offset']}`),
);
const delayed = await broker.exchange(DELAYED, 'x-delayed-message', DELAYED_DECLARATION);
const routed = await broker.queue(DELAYED, { durable: true });
await routed.bind(DELAYED, 'd');
const ackDelayed = acker((m) => `${DELAYED} ${idOfBody(DELAYED, m.bodyString())}`);
await routed.subscribe({ manualAck: true, prefetch: 64 }, (m) => {
  const due = Number(m.properties.headers?.due);
  const now = Date.now();
  if (now < due) print(`E ${DELAYED} ${idOfBody(DELAYED, m.bodyString())} ${due} ${now}\n`);
  ackDelayed(m);
});
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

/** Publishes a few persistent messages to the delayed exchange, each due within MAX_DELAY_MS. */
function publishDelayed(): void {
  const count = 1 + Math.floor(rand() * 8);
  const first = idOf(run, seq + 1);
  seq += count;
  print(`S ${DELAYED} ${first} ${first + count - 1}\n`);
  const published: Promise<string>[] = [];
  for (let id = first; id < first + count; id++) {
    const delay = Math.floor(rand() * MAX_DELAY_MS);
    const headers = { 'x-delay': delay, due: Date.now() + delay };
    published.push(
      delayed
        .publish(bodyOf(DELAYED, id), { routingKey: 'd', deliveryMode: 2, headers })
        .then(() => `P ${DELAYED} ${id}\n`),
    );
  }
  inFlight.push(Promise.all(published).then((lines) => void print(lines.join(''))));
}
for (;;) {
  if (!structural && rand() < 0.02) declareOrDelete();
  if (rand() < 0.15) {
    publishDelayed();
    await new Promise((resolve) => setImmediate(resolve));
    continue;
  }
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
      queues[name].publish(bodyOf(name, id), properties).then(
        () => `P ${name} ${id}${key === undefined ? '' : ` ${key}`}\n`,
        // The full quorum queue refuses (reject-publish): not resolved, nothing to print.
        (error: unknown) => {
          if (name === 'quorum') return '';
          throw error;
        },
      ),
    );
  }
  inFlight.push(Promise.all(published).then((lines) => void print(lines.join(''))));
  if (inFlight.length > 4) await inFlight.shift();
  await new Promise((resolve) => setImmediate(resolve));
}
