/**
 * Redeclaration equivalence, as RabbitMQ checks it: a redeclare must agree with the declaration
 * on `durable`, `auto_delete` and on every argument that shapes the queue; otherwise it fails with
 * 406 and RabbitMQ's wording, e.g.
 *
 *   PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'jobs' in vhost '/':
 *   received the value '5' of type 'byte' but current is none
 *
 * The arguments RabbitMQ compares for the queue's type are compared, and every other argument
 * the queue's kind acts on (`KINDS[kind].compared`); others are not, so an application passing
 * extra arguments keeps working. Values compare as AMQP fields do: numbers by value
 * whatever their width. A redeclaration of a queue that exists is compared before its arguments
 * are validated, as RabbitMQ does: a value the queue would refuse is an inequivalent one.
 */
import { PreconditionFailedError, resourceName } from '../errors.js';
import { type ComparedArgument, fieldEquals, inequivalence } from '../exchanges/field-values.js';
import type { FieldTable } from '../message/types.js';
import { wireTypeFor, wireTypesOf } from '../message/wire-types.js';
import { LVQ_ARGUMENT, LVQ_KEY_ARGUMENT } from '../queues/lvq/arguments.js';
import type { Declaration } from './declare-options.js';
import { KINDS } from './queue-kinds.js';

/**
 * Throws 406 PRECONDITION_FAILED naming the first flag or argument in which `received` differs
 * from the `current` declaration; which arguments count is the current queue's kind's business.
 * Exclusivity is the owner's business (405), not checked here.
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
  for (const arg of KINDS[current.kind].compared) {
    const a = compared(received, current, arg);
    const b = compared(current, received, arg);
    if (
      a.value === undefined
        ? b.value === undefined
        : b.value !== undefined && fieldEquals(a.value, b.value)
    ) {
      continue;
    }
    throw new PreconditionFailedError(`inequivalent arg '${arg}' ${where}: ${inequivalence(a, b)}`);
  }
}

/**
 * The value of `arg` that counts for `declaration` when compared with `other`, and the tag it
 * travelled as: an absent `x-queue-type` and `classic` are one; two last-value queues compare
 * their key (however it was spelled) and ignore `x-max-priority`, which an LVQ ignores too.
 */
function compared(declaration: Declaration, other: Declaration, arg: string): ComparedArgument {
  const args = declaration.arguments;
  if (arg === 'x-queue-type' && args[arg] === 'classic' && other.arguments[arg] === undefined) {
    return { value: undefined };
  }
  if (declaration.kind === 'lvq' && other.kind === 'lvq') {
    if (arg === LVQ_ARGUMENT || arg === 'x-max-priority') return { value: undefined };
    if (arg === LVQ_KEY_ARGUMENT) return { value: declaration.lvqKey };
  }
  return {
    value: args[arg],
    wireType: wireTypeFor(wireTypesOf(args as FieldTable), arg, args[arg]),
  };
}
