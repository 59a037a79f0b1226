/**
 * The generator's profiles. `basic` draws queues with any arguments and every operation;
 * `dead-letter` builds dead-letter topologies between length-limited queues (loops of two and
 * three queues, chains ending in the DLQ) and requeues into them; `time` gives queues TTLs of
 * 50 to 500 ms and lets time pass between operations; `quorum` declares quorum queues with
 * delivery limits and requeues into them (see `quorumQueue`).
 */
import fc from 'fast-check';
import {
  closeOp,
  getOp,
  type Operation,
  type QueueSpec,
  queueOp,
  type Sequence,
  sequences,
  sequencesOf,
  settleOp,
  subscribeOp,
} from './operations.js';

export type Profile = 'basic' | 'dead-letter' | 'time' | 'quorum';

export const PROFILES: readonly Profile[] = ['basic', 'dead-letter', 'time', 'quorum'];

/** A publish; of 2 to `burst` messages at once when given. */
function publishOp(queue: fc.Arbitrary<number>, burst?: number): fc.Arbitrary<Operation> {
  const one = fc.record(
    {
      op: fc.constant('publish' as const),
      queue,
      header: fc.integer({ min: 0, max: 9 }),
      size: fc.integer({ min: 1, max: 4 }),
    },
    { requiredKeys: ['op', 'queue', 'size'] },
  );
  if (burst === undefined) return one;
  return fc
    .tuple(one, fc.integer({ min: 2, max: burst }))
    .map(([publish, count]) => ({ ...publish, burst: count }));
}

/** A length-limited queue that dead-letters (the target is chosen by the topology). */
const limitedQueue = fc.record(
  {
    maxLength: fc.integer({ min: 0, max: 2 }),
    maxLengthBytes: fc.integer({ min: 0, max: 8 }),
    overflow: fc.constantFrom('drop-head' as const, 'reject-publish-dlx' as const),
    deadLetter: fc.constant(true),
    singleActiveConsumer: fc.constant(false),
  },
  { requiredKeys: ['maxLength', 'deadLetter', 'singleActiveConsumer'] },
);

/** Two or three limited queues, each dead-lettering to the next; the last to the first or the DLQ. */
const deadLetterTopology: fc.Arbitrary<readonly QueueSpec[]> = fc
  .tuple(fc.array(limitedQueue, { minLength: 2, maxLength: 3 }), fc.boolean())
  .map(([specs, loop]) =>
    specs.map((spec, i) => {
      const next = i + 1 < specs.length ? i + 1 : loop ? 0 : undefined;
      return next === undefined ? spec : { ...spec, deadLetterTo: next };
    }),
  );

/** Nacks and rejects requeue three times in four: requeues into full queues are the point. */
const mostlyRequeue = fc.oneof(
  { weight: 3, arbitrary: fc.constant(true) },
  { weight: 1, arbitrary: fc.constant(false) },
);

/** Operations that requeue into the queues: the dead-letter and quorum profiles'. */
function deadLetterOperation(specs: readonly QueueSpec[]): fc.Arbitrary<Operation> {
  const queue = fc.integer({ min: 0, max: specs.length - 1 });
  return fc.oneof(
    { weight: 5, arbitrary: publishOp(queue) },
    { weight: 2, arbitrary: getOp(queue) },
    { weight: 5, arbitrary: settleOp(mostlyRequeue) },
    { weight: 3, arbitrary: subscribeOp(queue) },
    { weight: 2, arbitrary: closeOp },
    { weight: 1, arbitrary: queueOp('purge', queue) },
    { weight: 1, arbitrary: queueOp('stats', queue) },
  );
}

const ttl = fc.integer({ min: 50, max: 500 });

/**
 * A queue whose messages all live as long: by `x-message-ttl`, by an `expiration` on every
 * publish, or both. Equal TTLs keep deadlines in queue order, so RabbitMQ's expiry at the head
 * and mqlite's anywhere in the queue agree (README: "Message TTL removes an expired message
 * wherever it is in the queue").
 */
const timedQueue: fc.Arbitrary<QueueSpec> = fc
  .record(
    {
      maxLength: fc.integer({ min: 0, max: 3 }),
      overflow: fc.constantFrom('drop-head' as const, 'reject-publish-dlx' as const),
      deadLetter: fc.boolean(),
      singleActiveConsumer: fc.boolean(),
      messageTtl: ttl,
      expiration: ttl,
    },
    { requiredKeys: ['deadLetter', 'singleActiveConsumer'] },
  )
  .filter((spec) => spec.messageTtl !== undefined || spec.expiration !== undefined);

function timeOperation(specs: readonly QueueSpec[]): fc.Arbitrary<Operation> {
  const queue = fc.integer({ min: 0, max: specs.length - 1 });
  return fc.oneof(
    { weight: 4, arbitrary: publishOp(queue) },
    // Messages published at one instant expire at one instant: they leave in queue order.
    { weight: 2, arbitrary: publishOp(queue, 4) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('wait' as const), ms: ttl }) },
    { weight: 2, arbitrary: getOp(queue) },
    { weight: 3, arbitrary: settleOp(fc.boolean()) },
    { weight: 2, arbitrary: subscribeOp(queue) },
    { weight: 1, arbitrary: closeOp },
    { weight: 1, arbitrary: queueOp('purge', queue) },
    { weight: 1, arbitrary: queueOp('stats', queue) },
  );
}

/**
 * A quorum queue as RabbitMQ 3.10 and 4.x treat alike: always with an `x-delivery-limit` of 0
 * to 3 (without one 4.x, and mqlite, stop at 20 and 3.10 never; `-1` differs too: README,
 * "Differences from the brokers"), dead-lettering to the DLQ or not, length limits with
 * `drop-head` or `reject-publish`. No TTL (the time profile covers it) and no single active
 * consumer (a quorum queue refuses it `get` with 405, which closes the channel on a broker).
 */
const quorumQueue: fc.Arbitrary<QueueSpec> = fc.record(
  {
    maxLength: fc.integer({ min: 0, max: 3 }),
    maxLengthBytes: fc.integer({ min: 0, max: 8 }),
    overflow: fc.constantFrom('drop-head' as const, 'reject-publish' as const),
    deadLetter: fc.boolean(),
    singleActiveConsumer: fc.constant(false),
    quorum: fc.record({ deliveryLimit: fc.integer({ min: 0, max: 3 }) }),
  },
  { requiredKeys: ['deadLetter', 'singleActiveConsumer', 'quorum'] },
);

/** The sequences of `profile`. */
export function profileSequences(profile: Profile): fc.Arbitrary<Sequence> {
  switch (profile) {
    case 'basic':
      return sequences();
    case 'dead-letter':
      return sequencesOf(deadLetterTopology, deadLetterOperation, 20);
    case 'time':
      return sequencesOf(fc.array(timedQueue, { minLength: 1, maxLength: 2 }), timeOperation);
    case 'quorum':
      return sequencesOf(
        fc.array(quorumQueue, { minLength: 1, maxLength: 2 }),
        deadLetterOperation,
        20,
      );
  }
}
