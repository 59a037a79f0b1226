/**
 * Declaring a last-value queue through AMQP arguments, as the Qpid broker spells them:
 * `qpid.last_value_queue: true` (key header `qpid.LVQ_key`) or
 * `qpid.last_value_queue_key: '<header>'`. An LVQ takes every classic-queue argument (TTL,
 * length limits, dead-lettering, ...) except `x-max-priority`, which it ignores: when LVQ and
 * priority arguments come together the queue is an LVQ without priorities, as the Qpid Java
 * broker documents.
 */
import { inequivalentArg, invalidArg } from '../../errors.js';
import {
  assertEquivalentClassicArguments,
  CLASSIC_ARGUMENTS,
  type ClassicArguments,
  parseClassicArguments,
} from '../arguments.js';

/** Argument that makes a queue an LVQ keyed by {@link DEFAULT_LVQ_KEY}. */
export const LVQ_ARGUMENT = 'qpid.last_value_queue';
/** Argument that makes a queue an LVQ keyed by the header it names. */
export const LVQ_KEY_ARGUMENT = 'qpid.last_value_queue_key';
/** The key header of an LVQ declared without `qpid.last_value_queue_key`. */
export const DEFAULT_LVQ_KEY = 'qpid.LVQ_key';

/** The queue arguments a last-value queue acts on, or ignores as Qpid does (`x-max-priority`). */
export const LVQ_ARGUMENTS: readonly string[] = [
  ...CLASSIC_ARGUMENTS,
  LVQ_ARGUMENT,
  LVQ_KEY_ARGUMENT,
];

/** The validated declaration of a last-value queue. */
export interface LvqDeclaration {
  /** Name of the header whose value is the message's key. */
  readonly key: string;
  /** The classic-queue arguments, without `maxPriority` (ignored by an LVQ). */
  readonly classic: ClassicArguments;
}

/** Whether the arguments ask for a last-value queue (whatever else they say). */
export function isLvqDeclaration(args: Readonly<Record<string, unknown>> | undefined): boolean {
  if (args === undefined) return false;
  const flag = args[LVQ_ARGUMENT];
  return (
    args[LVQ_KEY_ARGUMENT] !== undefined || (flag !== undefined && flag !== false && flag !== 0)
  );
}

/**
 * Validates the arguments of a declaration and returns the LVQ it declares, or undefined when
 * the arguments do not make an LVQ (neither LVQ argument, or `qpid.last_value_queue: false`).
 *
 * @param queue the queue as errors name it (`resourceName`: "queue 'q' in vhost '/'").
 * @throws PreconditionFailedError (406) for an LVQ argument of the wrong type, an empty or
 * over-long key, `qpid.last_value_queue: false` beside a key, or an invalid classic argument.
 */
export function parseLvqDeclaration(
  args: Readonly<Record<string, unknown>> | undefined,
  queue: string,
): LvqDeclaration | undefined {
  const a = args ?? {};
  const flag = a[LVQ_ARGUMENT];
  if (flag !== undefined && typeof flag !== 'boolean' && flag !== 0 && flag !== 1) {
    throw invalidArg(LVQ_ARGUMENT, queue, `must be a boolean, got ${describe(flag)}`);
  }
  const keyArg = a[LVQ_KEY_ARGUMENT];
  if (keyArg !== undefined) {
    if (typeof keyArg !== 'string' || keyArg.length === 0 || Buffer.byteLength(keyArg) > 255) {
      throw invalidArg(
        LVQ_KEY_ARGUMENT,
        queue,
        `must be a header name of 1..255 bytes, got ${describe(keyArg)}`,
      );
    }
    if (flag === false || flag === 0) {
      throw invalidArg(LVQ_KEY_ARGUMENT, queue, `contradicts ${LVQ_ARGUMENT}: false`);
    }
  } else if (flag === undefined || flag === false || flag === 0) {
    return undefined;
  }
  const { 'x-max-priority': _ignored, ...rest } = a;
  const { maxPriority: _none, ...classic } = parseClassicArguments(rest, queue);
  return { key: keyArg ?? DEFAULT_LVQ_KEY, classic };
}

/**
 * Throws 406 "inequivalent arg '…' for queue '…'" unless `args` redeclares the LVQ `declared`:
 * a redeclaration without LVQ arguments, with another key or other classic arguments fails
 * (`x-max-priority` may differ: an LVQ ignores it). A queue of another kind redeclared with LVQ
 * arguments is the caller's check: `isLvqDeclaration(args)` tells.
 */
export function assertEquivalentLvqDeclaration(
  declared: LvqDeclaration,
  args: Readonly<Record<string, unknown>> | undefined,
  queue: string,
): void {
  const redeclared = parseLvqDeclaration(args, queue);
  if (redeclared === undefined) throw inequivalentArg(LVQ_ARGUMENT, queue);
  if (redeclared.key !== declared.key) throw inequivalentArg(LVQ_KEY_ARGUMENT, queue);
  assertEquivalentClassicArguments(declared.classic, redeclared.classic, queue);
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value.slice(0, 40)}'` : String(value);
}
