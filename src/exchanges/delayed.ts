/**
 * Delayed exchanges, as LavinMQ serves them: the `x-delayed-message` type routes as the ordinary
 * type its `x-delayed-type` argument names, and `x-delayed-exchange: true` makes an exchange of
 * any type delayed. A message published to a delayed exchange with an `x-delay` header is held
 * and routed once its delay has passed; what holds it lives above this layer.
 */
import { PreconditionFailedError } from '../errors.js';
import type { FieldTable, StoredMessage } from '../message/types.js';
import { emptyTable } from '../table.js';
import { EXCHANGE_TYPES, type ExchangeType, type RoutingType } from './types.js';

/** The exchange type of a delayed exchange whose routing `x-delayed-type` names. */
export const DELAYED_TYPE = 'x-delayed-message';

/** The header holding a message's delay in milliseconds. */
export const DELAY_HEADER = 'x-delay';

/** The longest delay: an unsigned 32-bit count of milliseconds (about 49.7 days), as LavinMQ. */
export const MAX_DELAY = 0xffff_ffff;

/** How an exchange of a declared type and arguments routes, and whether it delays messages. */
export interface ExchangeRouting {
  readonly routingType: RoutingType;
  readonly delayed: boolean;
}

/**
 * The routing of an exchange declared with `type` and `args`.
 * @throws PreconditionFailedError (406) for an `x-delayed-message` exchange without an
 *   `x-delayed-type`, or with one that names no routing type, worded as LavinMQ words them.
 */
export function exchangeRouting(type: ExchangeType, args: Readonly<FieldTable>): ExchangeRouting {
  if (type !== DELAYED_TYPE)
    return { routingType: type, delayed: args['x-delayed-exchange'] === true };
  const routingType = Object.hasOwn(args, 'x-delayed-type') ? args['x-delayed-type'] : undefined;
  if (routingType === undefined || routingType === null) {
    throw new PreconditionFailedError("Missing required argument 'x-delayed-type'");
  }
  if (
    routingType === DELAYED_TYPE ||
    !(EXCHANGE_TYPES as readonly unknown[]).includes(routingType)
  ) {
    throw new PreconditionFailedError(`unknown exchange type '${String(routingType)}'`);
  }
  return { routingType: routingType as RoutingType, delayed: true };
}

/**
 * The delay a message asks for, or undefined when it has no `x-delay` header (it is routed at
 * once). As LavinMQ reads it: an integer from 0 to {@link MAX_DELAY}; anything else (negative,
 * larger, fractional, not a number) is a delay of 0, held and routed at the next tick.
 */
export function delayOf(headers: Readonly<FieldTable> | undefined): number | undefined {
  if (headers === undefined || !Object.hasOwn(headers, DELAY_HEADER)) return undefined;
  const value = headers[DELAY_HEADER];
  const ms = typeof value === 'bigint' ? Number(value) : value;
  return typeof ms === 'number' && Number.isInteger(ms) && ms >= 0 && ms <= MAX_DELAY ? ms : 0;
}

/** The message as it is routed when due: without its `x-delay` header, as LavinMQ routes it. */
export function withoutDelay(message: StoredMessage): StoredMessage {
  const headers = message.properties.headers;
  if (headers === undefined || !Object.hasOwn(headers, DELAY_HEADER)) return message;
  const rest: FieldTable = emptyTable();
  for (const key of Object.keys(headers)) if (key !== DELAY_HEADER) rest[key] = headers[key];
  return { ...message, properties: { ...message.properties, headers: rest } };
}
