/**
 * Declaring an exchange, checked before anything changes: the flags, the type, the arguments, the
 * reserved names, and RabbitMQ's equivalence rules when the exchange exists.
 */
import { AccessRefusedError, PreconditionFailedError } from '../errors.js';
import type { FieldTable } from '../message/types.js';
import { assertSameAlternate, checkAlternateType } from './alternate-exchange.js';
import { parseHashOptions } from './consistent-hash.js';
import { checkShortString, copyArgs, flag } from './declare-checks.js';
import { deduplicationDiff, deduplicationOptions } from './deduplication.js';
import { type ExchangeRouting, exchangeRouting } from './delayed.js';
import type { ExchangeErrors } from './exchange-errors.js';
import { DEFAULT_EXCHANGE, type ExchangeState } from './exchange-state.js';
import { type ExchangeDeclareOptions, type ExchangeType, isExchangeType } from './types.js';

/**
 * What `declare()` with these arguments would do: the existing exchange it names, or what to
 * create. Throws what it would throw.
 */
export function checkDeclaration(
  exchanges: ReadonlyMap<string, ExchangeState>,
  errors: ExchangeErrors,
  name: string,
  type: string,
  options: ExchangeDeclareOptions,
) {
  checkShortString(name, 'exchange name');
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('exchange options must be an object');
  }
  const durable = flag(options.durable, true, 'durable');
  const autoDelete = flag(options.autoDelete, false, 'autoDelete');
  const internal = flag(options.internal, false, 'internal');
  const passive = flag(options.passive, false, 'passive');
  if (passive) {
    if (name === DEFAULT_EXCHANGE) throw errors.defaultRefused();
    const existing = exchanges.get(name);
    if (!existing) throw errors.notFound(name);
    return { existing };
  }
  // RabbitMQ checks the type first; 4.x closes the channel (3.10 closed the connection, 503).
  if (!isExchangeType(type)) {
    throw new PreconditionFailedError(`unknown exchange type '${String(type)}'`);
  }
  if (name === DEFAULT_EXCHANGE) throw errors.defaultRefused();
  const existing = exchanges.get(name);
  const args = copyArgs(options.arguments, 'exchange arguments');
  checkAlternateType(name, args, errors);
  const routing = exchangeRouting(type, args);
  if (existing) {
    assertEquivalent(existing, type, routing, durable, autoDelete, internal, args, errors);
    return { existing };
  }
  if (name.startsWith('amq.')) {
    throw new AccessRefusedError(`exchange name '${name}' contains reserved prefix 'amq.*'`);
  }
  if (type === 'x-consistent-hash') parseHashOptions(args);
  deduplicationOptions(args);
  return { existing, durable, autoDelete, internal, args };
}

function assertEquivalent(
  state: ExchangeState,
  type: ExchangeType,
  routing: ExchangeRouting,
  durable: boolean,
  autoDelete: boolean,
  internal: boolean,
  args: FieldTable,
  errors: ExchangeErrors,
): void {
  const differs = (arg: string, received: unknown, current: unknown) =>
    new PreconditionFailedError(
      `inequivalent arg '${arg}' for ${errors.exchangeText(state.name)}: received '${String(received)}' but current is '${String(current)}'`,
    );
  // A delayed exchange is one however declared, as on LavinMQ: `x-delayed-message` with
  // `x-delayed-type: topic` is the same exchange as `topic` with `x-delayed-exchange: true`.
  if (routing.delayed !== state.delayed) {
    throw differs('x-delayed-exchange', routing.delayed, state.delayed);
  }
  if (routing.routingType !== state.routingType) {
    const arg = state.delayed ? 'x-delayed-type' : 'type';
    throw differs(arg, routing.delayed ? routing.routingType : type, state.routingType);
  }
  if (durable !== state.durable) throw differs('durable', durable, state.durable);
  if (autoDelete !== state.autoDelete) throw differs('auto_delete', autoDelete, state.autoDelete);
  if (internal !== state.internal) throw differs('internal', internal, state.internal);
  assertSameAlternate(state, args, errors);
  // LavinMQ compares every argument; mqlite, as RabbitMQ, those that shape the exchange.
  if (deduplicationDiff(state.arguments, args) !== undefined) {
    throw new PreconditionFailedError(
      `Existing exchange '${state.name}' declared with other arguments`,
    );
  }
}
