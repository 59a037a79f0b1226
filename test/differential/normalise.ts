/**
 * Where mqlite differs from RabbitMQ on purpose, the differential test steps around it here, and
 * only here. Each entry names the README entry ("Differences from the brokers") it stands for.
 */
import type { Operation } from './operations.js';

/** The documented differences the test normalises away, by the README entry each stands for. */
export const DELIBERATE = {
  multipleOnPulled:
    '"`multiple` on a pulled delivery settles those pulled from the same queue": a pulled delivery is settled without `multiple`',
  channelErrors:
    '"Deliveries have no `channel`": a call that fails with a channel error (get, purge or subscribe on a deleted queue) closes the client\'s channel on RabbitMQ and returns what was pulled on it; it is not made',
  cancel:
    '"`subscription.cancel()` is a basic.cancel": a consumer goes by its connection closing, never by cancel',
  maxLengthBytesReason:
    '"A message dropped by `x-max-length-bytes` is dead-lettered with reason `maxlenbytes`": read as `maxlen`',
  ttlAnywhere:
    '"Message TTL removes an expired message wherever it is in the queue, not only at the head": a publish with `expiration: \'0\'` is made without it unless the queue has no ready message and no consumer (it expires at once on both; held by a consumer it could come back behind another)',
  deliveryCount:
    '"Every delivery of a non-stream queue carries `x-delivery-count`": headers are not compared, but a quorum queue\'s `x-delivery-count`',
  quorumRequeueOrder:
    '"A requeued message goes back to its place in the queue": a quorum queue has one consumer, of prefetch 1, and a delivery pulled with a later ack only when it has no consumer nor unsettled delivery, so messages come back one at a time',
  quorumLimitCredit:
    '"A consumer of a quorum queue whose return the delivery limit dead-letters": such a nack or reject of a consumer\'s delivery is made without requeue',
  quorumGetConsumer:
    '"A `get` awaiting its ack is not a consumer of a quorum queue": a quorum queue\'s consumer count is not compared',
} as const;

/** What the operation's normalisation needs to know of the run so far. */
export interface RunState {
  readonly deleted: ReadonlySet<number>;
  /** Whether the unsettled delivery an operation picks was pulled with `get`. */
  pulled(delivery: number): boolean;
  /** Whether a queue has ready messages or consumers now (both brokers agreed on it). */
  busy(queue: number): Promise<boolean>;
  /** Whether a queue is a quorum queue. */
  quorum(queue: number): boolean;
  /** Whether a queue has an open consumer or an unsettled delivery. */
  inFlight(queue: number): boolean;
  /** Whether the delivery an operation picks is a quorum consumer's that a return would dead-letter. */
  atLimit(delivery: number): boolean;
}

/** The operation as both brokers run it, or why it is skipped. */
export async function normaliseOperation(
  operation: Operation,
  state: RunState,
): Promise<Operation | { readonly skip: string }> {
  switch (operation.op) {
    case 'publish':
      if (operation.expiration === '0' && (await state.busy(operation.queue))) {
        const { expiration: _expiration, ...rest } = operation;
        return rest;
      }
      return operation;
    case 'settle':
      if (operation.multiple && state.pulled(operation.delivery)) {
        return { ...operation, multiple: false };
      }
      if (operation.requeue && operation.how !== 'ack' && state.atLimit(operation.delivery)) {
        return { ...operation, requeue: false };
      }
      return operation;
    case 'get':
    case 'purge':
    case 'subscribe':
      if (state.deleted.has(operation.queue)) return { skip: DELIBERATE.channelErrors };
      return state.quorum(operation.queue) ? oneAtATime(operation, state) : operation;
    default:
      return operation;
  }
}

/** A dead-letter reason as RabbitMQ 3.10 writes it. */
export function normaliseReason(reason: unknown): unknown {
  return reason === 'maxlenbytes' ? 'maxlen' : reason;
}

/** A quorum queue's operation, so that at most one of its deliveries is unsettled at a time. */
function oneAtATime(
  operation: Extract<Operation, { op: 'get' | 'purge' | 'subscribe' }>,
  state: RunState,
): Operation | { readonly skip: string } {
  if (operation.op === 'purge' || (operation.op === 'get' && operation.noAck)) return operation;
  if (state.inFlight(operation.queue)) return { skip: DELIBERATE.quorumRequeueOrder };
  return operation.op === 'subscribe' ? { ...operation, prefetch: 1 } : operation;
}
