import { PreconditionFailedError } from '../errors.js';
import type { FieldTable, FieldValue } from '../message/types.js';
import { describeField, fieldEquals } from './field-values.js';
import type { Binding, ExchangeRouter } from './types.js';

/** How a headers binding combines its entries. */
export type HeadersMatch = 'all' | 'any' | 'all-with-x' | 'any-with-x';

const MATCH_MODES: readonly string[] = ['all', 'any', 'all-with-x', 'any-with-x'];

interface HeadersPattern {
  readonly destination: string;
  readonly all: boolean;
  /** Keys and expected values; `null` means only presence is required (AMQP void). */
  readonly keys: readonly string[];
  readonly values: readonly FieldValue[];
}

/**
 * Reads a headers binding the way RabbitMQ does: `x-match` (default `all`) must be one of the
 * four modes (else 406); the other arguments are the pattern, without those starting with `x-`
 * unless the mode ends in `-with-x`.
 */
export function parseHeadersBinding(binding: Binding): HeadersPattern {
  const mode = binding.args['x-match'] ?? 'all';
  if (typeof mode !== 'string' || !MATCH_MODES.includes(mode)) {
    throw new PreconditionFailedError(
      `Invalid x-match field value '${describeField(mode)}'; expected all, any, all-with-x, or any-with-x`,
    );
  }
  const withX = mode.endsWith('-with-x');
  const keys: string[] = [];
  const values: FieldValue[] = [];
  for (const [key, value] of Object.entries(binding.args)) {
    if (key === 'x-match' || value === undefined || (!withX && key.startsWith('x-'))) continue;
    keys.push(key);
    values.push(value);
  }
  return { destination: binding.destination, all: mode.startsWith('all'), keys, values };
}

/** Whether a message's headers satisfy a pattern (RabbitMQ's rules, including empty patterns). */
function matches(p: HeadersPattern, headers: Readonly<FieldTable> | undefined): boolean {
  // With no entries, `all` holds vacuously and `any` never does.
  if (p.keys.length === 0) return p.all;
  if (!headers) return false;
  for (let i = 0; i < p.keys.length; i++) {
    const actual = headers[p.keys[i]!];
    const expected = p.values[i]!;
    const ok = actual !== undefined && (expected === null || fieldEquals(expected, actual));
    if (ok !== p.all) return ok;
  }
  return p.all;
}

/**
 * Headers: the routing key is ignored; each binding's arguments are a pattern over the message
 * headers. Every binding is tested (as brokers do), so a route costs O(bindings × pattern size).
 */
export class HeadersRouter implements ExchangeRouter {
  readonly #patterns = new Map<string, HeadersPattern>();

  add(id: string, binding: Binding): void {
    this.#patterns.set(id, parseHeadersBinding(binding));
  }

  remove(id: string): void {
    this.#patterns.delete(id);
  }

  route(_routingKey: string, headers: Readonly<FieldTable> | undefined, out: Set<string>): void {
    for (const p of this.#patterns.values()) {
      if (!out.has(p.destination) && matches(p, headers)) out.add(p.destination);
    }
  }
}
