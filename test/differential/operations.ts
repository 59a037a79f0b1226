/**
 * The random operation sequences of the differential test: one to three classic queues with
 * random arguments, dead-lettering to one shared DLQ, and what clients do to them. Operations name
 * queues, consumers and deliveries by index, so one sequence means the same on every broker.
 */
import fc from 'fast-check';

/** How a queue is declared. TTLs are an hour or none: they never race the test's real time. */
export interface QueueSpec {
  readonly maxPriority?: number;
  readonly maxLength?: number;
  readonly maxLengthBytes?: number;
  readonly overflow?: 'drop-head' | 'reject-publish' | 'reject-publish-dlx';
  readonly deadLetter: boolean;
  readonly singleActiveConsumer: boolean;
  readonly messageTtl?: number;
  /** Declared durable (a quorum queue must be). */
  readonly durable?: boolean;
  /** Further arguments a profile declares with (a quorum queue's type and limits). */
  readonly arguments?: Readonly<Record<string, unknown>>;
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
  | { readonly op: 'delete'; readonly queue: number };

export interface Sequence {
  readonly queues: readonly QueueSpec[];
  readonly operations: readonly Operation[];
}

const queueSpec: fc.Arbitrary<QueueSpec> = fc.record(
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
    {
      weight: 3,
      arbitrary: fc.record({ op: fc.constant('get' as const), queue, noAck: fc.boolean() }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('settle' as const),
        delivery: fc.nat(7),
        how: fc.constantFrom('ack' as const, 'nack' as const, 'reject' as const),
        requeue: fc.boolean(),
        multiple: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('subscribe' as const),
        queue,
        prefetch: fc.integer({ min: 1, max: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('close' as const), consumer: fc.nat(3) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('purge' as const), queue }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('stats' as const), queue }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), queue }) },
  );
}

/**
 * A random sequence: one to three queues (of `spec`, by default classic queues), up to
 * `maxOperations` operations on them.
 */
export function sequences(
  maxOperations = 16,
  spec: fc.Arbitrary<QueueSpec> = queueSpec,
): fc.Arbitrary<Sequence> {
  return fc.array(spec, { minLength: 1, maxLength: 3 }).chain((queues) =>
    fc.record({
      queues: fc.constant(queues),
      operations: fc.array(operation(queues.length), { minLength: 1, maxLength: maxOperations }),
    }),
  );
}
