/**
 * Dead-lettering as RabbitMQ does it: the copy of a dead message that goes to the dead-letter
 * exchange carries an `x-death` history and loses its `expiration`.
 */
import type { DeadLetterReason } from '../../diagnostics.js';
import type {
  FieldTable,
  FieldValue,
  MessageProperties,
  StoredMessage,
} from '../../message/types.js';
import { carryWireTypes, setWireType } from '../../message/wire-types.js';

/** Why a message was dead-lettered, as RabbitMQ writes it in `x-death`. */
export type DeathReason = DeadLetterReason;

/**
 * Where a queue sends its dead messages. `message.exchange` and `message.routingKey` are the
 * dead-letter exchange and routing key to route by; the owner (the Broker) routes it like a
 * publish and drops it silently when nothing matches, as brokers do. Called from a dead-letter
 * hop (`dead-letter-hops.ts`) once the dying queue is done with the message, never inside
 * another queue's update; a returned promise is not awaited by the queue (a failure is reported
 * through `onError`), but the message's record is deleted only once it resolves.
 */
export type DeadLetterRouter = (
  message: StoredMessage,
  confirms?: DeadLetterConfirms,
) => void | Promise<void>;

/**
 * An `at-least-once` dead letter's confirmations, across its attempts: with them the router
 * publishes only to the queues not yet in `confirmed`, adds each that stores the copy, and
 * rejects with `UnconfirmedDeadLetter` when the copy reached no queue or a queue refused it.
 */
export interface DeadLetterConfirms {
  readonly confirmed: Set<string>;
}

/** An `at-least-once` dead letter some target has not confirmed yet: it is tried again later. */
export class UnconfirmedDeadLetter extends Error {
  override readonly name = 'UnconfirmedDeadLetter';
}

/** An `x-death` entry whose `count` goes out over AMQP as a long, as RabbitMQ writes it. */
function longCount(entry: Record<string, FieldValue>): Record<string, FieldValue> {
  setWireType(entry, 'count', 'l');
  return entry;
}

/** One `x-death` entry as read back from headers. */
type DeathEntry = Readonly<Record<string, FieldValue>>;

function ccKeys(headers: Readonly<FieldTable> | undefined): string[] {
  const cc = headers?.CC;
  return Array.isArray(cc) ? cc.filter((key): key is string => typeof key === 'string') : [];
}

/**
 * The message to route for a death of `message` in `queue`: `x-death` gains (or counts up) the
 * entry for this queue and reason, moved to the front; `x-first-death-*` are set on the first
 * death; `expiration` is removed (kept as the entry's `original-expiration`), and so is `CC` when
 * a dead-letter routing key is given.
 */
export function deadLetteredCopy(
  message: StoredMessage,
  queue: string,
  reason: DeathReason,
  time: number,
  exchange: string,
  routingKey: string | undefined,
): StoredMessage {
  const props = message.properties;
  const headers: FieldTable = props.headers
    ? carryWireTypes(props.headers, { ...props.headers })
    : {};
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as DeathEntry[]) : [];
  const i = deaths.findIndex((d) => d.queue === queue && d.reason === reason);
  let entry: DeathEntry;
  if (i >= 0) {
    const previous = deaths[i]!;
    entry = Object.freeze(longCount({ ...previous, count: Number(previous.count ?? 0) + 1 }));
  } else {
    const fresh: Record<string, FieldValue> = {
      count: 1,
      reason,
      queue,
      // An AMQP timestamp counts whole seconds: RabbitMQ's x-death times have no milliseconds.
      time: new Date(time - (time % 1000)),
      exchange: message.exchange,
      // The keys it was routed by: its own and its CC (a BCC is not stored to be listed).
      'routing-keys': Object.freeze([message.routingKey, ...ccKeys(props.headers)]),
    };
    if (props.expiration !== undefined) fresh['original-expiration'] = props.expiration;
    entry = Object.freeze(longCount(fresh));
  }
  headers['x-death'] = Object.freeze([entry, ...deaths.filter((_, k) => k !== i)]);
  // A dead-letter routing key replaces the keys CC adds, as RabbitMQ drops CC then.
  if (routingKey !== undefined) delete headers.CC;
  if (headers['x-first-death-reason'] === undefined) {
    headers['x-first-death-reason'] = reason;
    headers['x-first-death-queue'] = queue;
    headers['x-first-death-exchange'] = message.exchange;
  }
  const { expiration: _dropped, ...rest } = props;
  const properties: MessageProperties = { ...rest, headers: Object.freeze(headers) };
  return Object.freeze({
    exchange,
    routingKey: routingKey ?? message.routingKey,
    properties: Object.freeze(properties),
    body: message.body,
  });
}

/**
 * Whether delivering a dead-lettered `message` into `target` closes a cycle that no client took
 * part in: `target` appears in the message's `x-death` and no death since (and including) that
 * one was a rejection. Such messages are dropped; a cycle with a rejection in it continues.
 * `message` is the copy made by `deadLetteredCopy` (its newest entry is the current death).
 */
export function isDeadLetterCycle(message: StoredMessage, target: string): boolean {
  const deaths = message.properties.headers?.['x-death'];
  if (!Array.isArray(deaths)) return false;
  for (const death of deaths as DeathEntry[]) {
    if (death.reason === 'rejected') return false;
    if (death.queue === target) return true;
  }
  return false;
}
