/**
 * The `alternate-exchange` argument: where an exchange hands a message its bindings did not
 * match. Checked when declared, compared when redeclared, and followed when routing, where the
 * argument wins over a policy's, as in RabbitMQ.
 */
import { PreconditionFailedError } from '../errors.js';
import type { FieldTable } from '../message/types.js';
import type { ExchangeErrors } from './exchange-errors.js';
import type { ExchangeState } from './exchange-state.js';
import { amqpTypeName, inequivalence } from './field-values.js';

export const ALTERNATE_EXCHANGE = 'alternate-exchange';

/** Refuses (406) an `alternate-exchange` argument that is not a string. */
export function checkAlternateType(name: string, args: FieldTable, errors: ExchangeErrors): void {
  const alternate = args[ALTERNATE_EXCHANGE];
  if (alternate !== undefined && typeof alternate !== 'string') {
    throw new PreconditionFailedError(
      `invalid type '${amqpTypeName(alternate)}' for arg '${ALTERNATE_EXCHANGE}' in ${errors.exchangeText(name)}`,
    );
  }
}

/** Refuses (406) a redeclaration whose `alternate-exchange` differs from the exchange's own. */
export function assertSameAlternate(
  state: ExchangeState,
  args: FieldTable,
  errors: ExchangeErrors,
): void {
  const received = args[ALTERNATE_EXCHANGE];
  const current = state.arguments[ALTERNATE_EXCHANGE];
  if (received !== current) {
    throw new PreconditionFailedError(
      `inequivalent arg '${ALTERNATE_EXCHANGE}' for ${errors.exchangeText(state.name)}: ${inequivalence({ value: received }, { value: current })}`,
    );
  }
}

/** The exchange's own `alternate-exchange`, or else the one a policy gives it. */
export function alternateOf(
  state: ExchangeState,
  policyAlternate: ((exchange: string) => string | number | undefined) | undefined,
): unknown {
  return state.arguments[ALTERNATE_EXCHANGE] ?? policyAlternate?.(state.name);
}
