/**
 * Redeclaration equivalence, as RabbitMQ checks it: a redeclare must agree with the declaration
 * on `durable`, `auto_delete` and on every argument that shapes the queue; otherwise it fails with
 * 406 and RabbitMQ's wording, e.g.
 *
 *   PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'jobs' in vhost '/':
 *   received the value '5' of type 'signedint' but current is none
 *
 * Arguments mqlite does not interpret are not compared (RabbitMQ ignores them too), so an
 * application passing extra arguments keeps working. Values compare as AMQP fields do: numbers by
 * value whatever their width.
 */
import { PreconditionFailedError, resourceName } from '../errors.js';
import { amqpTypeName, describeField, fieldEquals } from '../exchanges/field-values.js';
import type { FieldValue } from '../message/types.js';
import { LVQ_ARGUMENT, LVQ_KEY_ARGUMENT } from '../queues/lvq/arguments.js';
import type { Declaration } from './declare-options.js';

/** The arguments whose value is part of a queue's identity, in the order they are checked. */
export const SIGNIFICANT_ARGUMENTS: readonly string[] = [
  'x-queue-type',
  LVQ_ARGUMENT,
  LVQ_KEY_ARGUMENT,
  'x-max-priority',
  'x-message-ttl',
  'x-expires',
  'x-max-length',
  'x-max-length-bytes',
  'x-overflow',
  'x-dead-letter-exchange',
  'x-dead-letter-routing-key',
  'x-delivery-limit',
  'x-single-active-consumer',
  'x-max-age',
  'x-stream-max-segment-size-bytes',
];

/**
 * Throws 406 PRECONDITION_FAILED naming the first flag or argument in which `received` differs
 * from the `current` declaration. Exclusivity is the owner's business (405), not checked here.
 */
export function assertEquivalent(current: Declaration, received: Declaration, vhost: string): void {
  const where = `for ${resourceName('queue', current.name, vhost)}`;
  const flag = (arg: string, a: boolean, b: boolean) => {
    if (a !== b) {
      throw new PreconditionFailedError(
        `inequivalent arg '${arg}' ${where}: received '${a}' but current is '${b}'`,
      );
    }
  };
  flag('durable', received.durable, current.durable);
  flag('auto_delete', received.autoDelete, current.autoDelete);
  for (const arg of SIGNIFICANT_ARGUMENTS) {
    const a = comparedValue(received, current, arg);
    const b = comparedValue(current, received, arg);
    if (a === undefined ? b === undefined : b !== undefined && fieldEquals(a, b)) continue;
    throw new PreconditionFailedError(
      `inequivalent arg '${arg}' ${where}: received ${describe(a)} but current is ${describe(b)}`,
    );
  }
}

/**
 * The value of `arg` that counts for `declaration` when compared with `other`: `x-queue-type`
 * defaults to `classic`; two last-value queues compare their key (however it was spelled) and
 * ignore `x-max-priority`, which an LVQ ignores too.
 */
function comparedValue(declaration: Declaration, other: Declaration, arg: string): FieldValue {
  const args = declaration.arguments;
  if (arg === 'x-queue-type')
    return args[arg] ?? (declaration.kind === 'stream' ? undefined : 'classic');
  if (declaration.kind === 'lvq' && other.kind === 'lvq') {
    if (arg === LVQ_ARGUMENT || arg === 'x-max-priority') return undefined;
    if (arg === LVQ_KEY_ARGUMENT) return declaration.lvqKey;
  }
  return args[arg];
}

function describe(value: FieldValue): string {
  return value === undefined
    ? 'none'
    : `the value '${describeField(value)}' of type '${amqpTypeName(value)}'`;
}
