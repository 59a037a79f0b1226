/**
 * The random operation sequences of the differential test: one to three queues (classic, or
 * quorum in the quorum profile) with
 * random arguments, dead-lettering to one shared DLQ (or, in the dead-letter profile, to each
 * other), and what clients do to them. Operations name queues, consumers and deliveries by index,
 * so one sequence means the same on every broker. The profiles are in profiles.ts.
 */
import fc from 'fast-check';

/**
 * How a queue is declared. TTLs are an hour or none, except in the time profile, where they are
 * 50 to 500 ms and the run keeps its comparisons clear of their deadlines (see timeline.ts).
 */
export interface QueueSpec {
  readonly maxPriority?: number;
  readonly maxLength?: number;
  readonly maxLengthBytes?: number;
  readonly overflow?: 'drop-head' | 'reject-publish' | 'reject-publish-dlx';
  readonly deadLetter: boolean;
  /** Dead-letters to the queue of this index instead of the shared DLQ. */
  readonly deadLetterTo?: number;
  /** Every publish to the queue carries this `expiration` (time profile). */
  readonly expiration?: number;
  readonly singleActiveConsumer: boolean;
  readonly messageTtl?: number;
  /** A quorum queue (durable), with this `x-delivery-limit` (quorum profile). */
  readonly quorum?: { readonly deliveryLimit: number };
}

export type Operation =
  | {
      readonly op: 'publish';
      readonly queue: number;
      readonly priority?: number;
      /** '0' expires at once; an hour never does during a run. */
      readonly expiration?: '0' | '3600000';
      readonly header?: number;
      readonly size: number;
      /** Publishes this many messages in one action: at one instant of mqlite's clock. */
      readonly burst?: number;
    }
  | { readonly op: 'get'; readonly queue: number; readonly noAck: boolean }
  /** Settles the `delivery`-th unsettled delivery (modulo how many there are), if any. */
  | {
      readonly op: 'settle';
      readonly delivery: number;
      readonly how: 'ack' | 'nack' | 'reject';
      readonly requeue: boolean;
      readonly multiple: boolean;
    }
  | { readonly op: 'subscribe'; readonly queue: number; readonly prefetch: number }
  /** The `consumer`-th open consumer (modulo) goes, as its connection closing. */
  | { readonly op: 'close'; readonly consumer: number }
  | { readonly op: 'purge'; readonly queue: number }
  | { readonly op: 'stats'; readonly queue: number }
  | { readonly op: 'delete'; readonly queue: number }
  /** Time passes: really on a broker, on mqlite's clock by as much. */
  | { readonly op: 'wait'; readonly ms: number };

export interface Sequence {
  readonly queues: readonly QueueSpec[];
  readonly operations: readonly Operation[];
}

export const queueSpec: fc.Arbitrary<QueueSpec> = fc.record(
  {
    maxPriority: fc.integer({ min: 1, max: 3 }),
    maxLength: fc.integer({ min: 0, max: 3 }),
    maxLengthBytes: fc.integer({ min: 0, max: 8 }),
    overflow: fc.constantFrom('drop-head', 'reject-publish', 'reject-publish-dlx'),
    deadLetter: fc.boolean(),
    singleActiveConsumer: fc.boolean(),
    messageTtl: fc.constant(3_600_000),
  },
  { requiredKeys: ['deadLetter', 'singleActiveConsumer'] },
);

/** Settles an unsettled delivery; `requeue` draws whether a nack or reject requeues. */
export function settleOp(requeue: fc.Arbitrary<boolean>): fc.Arbitrary<Operation> {
  return fc.record({
    op: fc.constant('settle' as const),
    delivery: fc.nat(7),
    how: fc.constantFrom('ack' as const, 'nack' as const, 'reject' as const),
    requeue,
    multiple: fc.boolean(),
  });
}

export function getOp(queue: fc.Arbitrary<number>): fc.Arbitrary<Operation> {
  return fc.record({ op: fc.constant('get' as const), queue, noAck: fc.boolean() });
}

export function subscribeOp(queue: fc.Arbitrary<number>): fc.Arbitrary<Operation> {
  return fc.record({
    op: fc.constant('subscribe' as const),
    queue,
    prefetch: fc.integer({ min: 1, max: 3 }),
  });
}

export const closeOp: fc.Arbitrary<Operation> = fc.record({
  op: fc.constant('close' as const),
  consumer: fc.nat(3),
});

export function queueOp(
  op: 'purge' | 'stats' | 'delete',
  queue: fc.Arbitrary<number>,
): fc.Arbitrary<Operation> {
  return fc.record({ op: fc.constant(op), queue });
}

function operation(queues: number): fc.Arbitrary<Operation> {
  const queue = fc.integer({ min: 0, max: queues - 1 });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record(
        {
          op: fc.constant('publish' as const),
          queue,
          priority: fc.integer({ min: 0, max: 4 }),
          expiration: fc.constantFrom('0' as const, '3600000' as const),
          header: fc.integer({ min: 0, max: 9 }),
          size: fc.integer({ min: 1, max: 4 }),
        },
        { requiredKeys: ['op', 'queue', 'size'] },
      ),
    },
    { weight: 3, arbitrary: getOp(queue) },
    { weight: 4, arbitrary: settleOp(fc.boolean()) },
    { weight: 2, arbitrary: subscribeOp(queue) },
    { weight: 1, arbitrary: closeOp },
    { weight: 1, arbitrary: queueOp('purge', queue) },
    { weight: 1, arbitrary: queueOp('stats', queue) },
    { weight: 1, arbitrary: queueOp('delete', queue) },
  );
}

/** Sequences of `queues`, each with up to `maxOperations` operations drawn by `operation`. */
export function sequencesOf(
  queues: fc.Arbitrary<readonly QueueSpec[]>,
  operation: (queues: readonly QueueSpec[]) => fc.Arbitrary<Operation>,
  maxOperations = 16,
): fc.Arbitrary<Sequence> {
  return queues.chain((specs) =>
    fc.record({
      queues: fc.constant(specs),
      operations: fc.array(operation(specs), { minLength: 1, maxLength: maxOperations }),
    }),
  );
}

/** A random sequence: one to three queues, up to `maxOperations` operations on them. */
export function sequences(maxOperations = 16): fc.Arbitrary<Sequence> {
  return sequencesOf(
    fc.array(queueSpec, { minLength: 1, maxLength: 3 }),
    (specs) => operation(specs.length),
    maxOperations,
  );
}
