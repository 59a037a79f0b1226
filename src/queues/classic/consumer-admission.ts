/**
 * Which consumers a classic queue admits, with RabbitMQ's refusals: a bad or (strict) unknown
 * consumer argument, an exclusive consumer beside others or on a single-active-consumer queue, a
 * reused tag. Separate from `ClassicQueue` because it only judges a request: the queue registers
 * the consumer and dispatches to it.
 */
import { AccessRefusedError, PreconditionFailedError, resourceName } from '../../errors.js';
import {
  type ConsumerCallback,
  checkSubscribeParams,
  type SubscribeParams,
  type Subscription,
} from '../consumer.js';
import { refuseUnknownArguments } from '../unknown-names.js';

/** Consumer arguments a classic queue acts on (strict mode refuses any other). */
const CONSUMER_ARGUMENTS: readonly string[] = ['x-priority'];

/** What a classic queue knows when a consumer asks to join it. */
export interface AdmittingQueue {
  readonly name: string;
  readonly vhost: string;
  /** Unknown consumer arguments are refused. */
  readonly strict: boolean;
  readonly singleActiveConsumer: boolean;
  /** An exclusive consumer holds the queue. */
  readonly exclusive: boolean;
  readonly consumers: readonly Subscription<number>[];
}

/**
 * Checks a new consumer's params and callback against its queue; returns its `x-priority`.
 * @throws AccessRefusedError (403) or PreconditionFailedError (406), as `ClassicQueue.subscribe`
 *   documents them.
 */
export function admitConsumer(
  params: SubscribeParams,
  callback: ConsumerCallback | undefined,
  queue: AdmittingQueue,
): number {
  checkSubscribeParams(params);
  if (callback !== undefined && typeof callback !== 'function') {
    throw new TypeError('subscribe() callback must be a function');
  }
  if (queue.strict) {
    refuseUnknownArguments(
      params.args,
      CONSUMER_ARGUMENTS,
      'consumer argument',
      queue.name,
      queue.vhost,
    );
  }
  const priority = consumerPriority(params.args?.['x-priority']);
  if (params.exclusive === true && queue.singleActiveConsumer) {
    throw new PreconditionFailedError(
      `cannot register an exclusive consumer on single active consumer queue '${queue.name}'`,
    );
  }
  if (queue.exclusive || (params.exclusive === true && queue.consumers.length > 0)) {
    throw new AccessRefusedError(
      `${resourceName('queue', queue.name, queue.vhost)} in exclusive use`,
    );
  }
  if (params.tag && queue.consumers.some((c) => c.consumerTag === params.tag)) {
    throw new PreconditionFailedError(
      `consumer tag '${params.tag}' is already in use on queue '${queue.name}'`,
    );
  }
  return priority;
}

function consumerPriority(value: unknown): number {
  if (value === undefined) return 0;
  const n = typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
    throw new PreconditionFailedError(
      `consumer argument x-priority must be an integer, got ${String(value)}`,
    );
  }
  return n;
}
