/**
 * The quorum-queue profile of the differential test: sequences on one to three quorum queues with
 * an explicit delivery limit (RabbitMQ 3.10 has no default one, mqlite follows 4.x's 20),
 * dead-lettering by either strategy, length limits and TTL, and the same
 * operations as the classic profile: publishes, gets, acks and requeues, consumers whose
 * connection closes.
 */
import fc from 'fast-check';
import { type QueueSpec, type Sequence, sequences } from './operations.js';

const quorumSpec: fc.Arbitrary<QueueSpec> = fc
  .record(
    {
      maxLength: fc.integer({ min: 0, max: 3 }),
      maxLengthBytes: fc.integer({ min: 0, max: 8 }),
      overflow: fc.constantFrom('drop-head' as const, 'reject-publish' as const),
      deadLetter: fc.boolean(),
      // basic.get, which the test drains queues with, is refused on those (the parity suite).
      singleActiveConsumer: fc.constant(false),
      messageTtl: fc.constant(3_600_000),
      deliveryLimit: fc.integer({ min: 0, max: 3 }),
      atLeastOnce: fc.boolean(),
    },
    { requiredKeys: ['deadLetter', 'singleActiveConsumer', 'deliveryLimit', 'atLeastOnce'] },
  )
  .map(({ deliveryLimit, atLeastOnce, ...spec }) => ({
    ...spec,
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      'x-delivery-limit': deliveryLimit,
      ...(atLeastOnce && { 'x-dead-letter-strategy': 'at-least-once' }),
    },
  }));

/**
 * Random sequences on quorum queues. A `get` that needs an ack is left out: RabbitMQ 3.10 counts
 * it as a consumer of the queue until the channel closes, which mqlite does not (README,
 * "Differences from the brokers").
 */
export function quorumSequences(maxOperations = 16): fc.Arbitrary<Sequence> {
  return sequences(maxOperations, quorumSpec).map((sequence) => ({
    ...sequence,
    operations: sequence.operations.map((operation) =>
      operation.op === 'get' ? { ...operation, noAck: true } : operation,
    ),
  }));
}
