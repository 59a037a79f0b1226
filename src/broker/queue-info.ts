/** How `broker.queues()` describes a queue: its declaration, the policy in force, statistics. */

import type { MqliteError } from '../errors.js';
import type { FieldTable } from '../message/types.js';
import type { Declaration } from './declare-options.js';
import { effectiveArguments, type Policies, type Policy } from './policies.js';
import { KINDS, type QueueStats } from './queue-kinds.js';

/** One queue as `broker.queues()` lists it: its declaration (`arguments` as declared), and more. */
export interface QueueInfo
  extends QueueStats,
    Pick<Declaration, 'name' | 'kind' | 'durable' | 'exclusive' | 'autoDelete' | 'arguments'> {
  /** The name of the policy that applies to it, if one does. */
  readonly policy?: string;
  /**
   * The arguments in force: the declared ones resolved with the policy's keys (as `x-` arguments,
   * the lower of two limits, the declared argument otherwise). Without a policy, `arguments`.
   */
  readonly effectiveArguments: Readonly<FieldTable>;
  /**
   * Set when the queue's stored data could not be opened (its statistics are then 0): calls on it
   * fail with this error until it is deleted. See `broker.damaged()`.
   */
  readonly damaged?: MqliteError;
}

/** The statistics of a queue whose data could not be opened. */
export const NO_STATS: QueueStats = {
  messages: 0,
  messagesReady: 0,
  messagesUnacknowledged: 0,
  bytes: 0,
  consumers: 0,
};

/** The policy that applies to a queue, and the arguments in force under it. */
export function appliedPolicy(
  policies: Policies,
  d: Declaration,
): { readonly policy: Policy | undefined; readonly arguments: Readonly<FieldTable> } {
  const policy = policies.forQueue(d.name, KINDS[d.kind].policyKeys);
  return { policy, arguments: effectiveArguments(d.arguments, policy) };
}

/** A queue's description from its declaration, the policy in force and its statistics. */
export function queueInfo(d: Declaration, policies: Policies, stats: QueueStats): QueueInfo {
  const applied = appliedPolicy(policies, d);
  return {
    name: d.name,
    kind: d.kind,
    durable: d.durable,
    exclusive: d.exclusive,
    autoDelete: d.autoDelete,
    arguments: d.arguments,
    ...(applied.policy && { policy: applied.policy.name }),
    effectiveArguments: applied.arguments,
    ...stats,
  };
}
