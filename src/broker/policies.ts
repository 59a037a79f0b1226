/**
 * Policies, as RabbitMQ and LavinMQ have them: named rules that set queue limits and exchange
 * settings on every queue or exchange whose name matches a pattern, at runtime, without
 * redeclaring. This module validates them, picks the one that applies to a name, and resolves a
 * policy and the declared arguments into the arguments in force. It knows nothing of queues: the
 * Broker hands the result to the queue kinds.
 */

import { DEFAULT_VHOST, NotFoundError, PreconditionFailedError, resourceName } from '../errors.js';
import type { FieldTable, FieldValue } from '../message/types.js';
import { maxAgeExpiry, parseMaxAge } from '../queues/stream/arguments.js';
import { emptyTable, isPlainTable } from '../table.js';

/** What a policy applies to, as `rabbitmqctl set_policy --apply-to` names it. */
export type PolicyTarget = 'queues' | 'exchanges' | 'all';

/** The keys a policy definition may hold, as RabbitMQ names them. */
export type PolicyKey =
  | 'message-ttl'
  | 'expires'
  | 'max-length'
  | 'max-length-bytes'
  | 'overflow'
  | 'dead-letter-exchange'
  | 'dead-letter-routing-key'
  | 'delivery-limit'
  | 'dead-letter-strategy'
  | 'max-age'
  | 'alternate-exchange'
  | 'delayed-message'
  | 'queue-mode';

/** A policy's settings: policy keys to their values. */
export type PolicyDefinition = { readonly [K in PolicyKey]?: string | number | boolean };

/** Options of `broker.setPolicy()`. */
export interface PolicyOptions {
  /** A regular expression; the policy applies to every name it matches (anchor it with `^…$`). */
  readonly pattern: string;
  /** Default `'all'`, as `rabbitmqctl set_policy`. */
  readonly applyTo?: PolicyTarget;
  /** Of the policies matching a name, the highest priority applies (default 0). */
  readonly priority?: number;
  /** The settings (`{ 'max-length': 1000, overflow: 'reject-publish' }`). */
  readonly definition: PolicyDefinition;
}

/** A policy as `broker.policies()` lists it: the shape of a RabbitMQ definitions file's entry. */
export interface Policy {
  readonly name: string;
  readonly vhost: string;
  readonly pattern: string;
  readonly 'apply-to': PolicyTarget;
  readonly priority: number;
  readonly definition: PolicyDefinition;
}

type Check = (value: unknown) => boolean;

const isString: Check = (v) => typeof v === 'string';
const atLeast =
  (min: number, max = Number.MAX_SAFE_INTEGER): Check =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
/** Largest timer value: Node clamps longer timeouts. */
const MAX_MS = 2 ** 31 - 1;

/** Each key's check and what RabbitMQ calls a value that fails it ("… is not a valid …"). */
const KEYS: Readonly<Record<PolicyKey, readonly [Check, string]>> = {
  'message-ttl': [atLeast(0, MAX_MS), 'message TTL'],
  expires: [atLeast(1, MAX_MS), 'queue expiry'],
  'max-length': [atLeast(0), 'maximum length'],
  'max-length-bytes': [atLeast(0), 'maximum length in bytes'],
  overflow: [
    (v) => v === 'drop-head' || v === 'reject-publish' || v === 'reject-publish-dlx',
    'overflow value',
  ],
  'dead-letter-exchange': [isString, 'dead letter exchange name'],
  'dead-letter-routing-key': [isString, 'dead letter routing key'],
  // -1 (any negative) is no limit, as RabbitMQ 4 takes it (3.10 refuses it).
  'delivery-limit': [atLeast(Number.MIN_SAFE_INTEGER), 'delivery limit'],
  'dead-letter-strategy': [
    (v) => v === 'at-most-once' || v === 'at-least-once',
    'dead letter strategy',
  ],
  'max-age': [(v) => isMaxAge(v), 'max age'],
  'alternate-exchange': [isString, 'alternate exchange name'],
  // LavinMQ's: its HTTP API takes the string, its definitions files the boolean.
  'delayed-message': [(v) => v === true || v === false || v === 'true' || v === 'false', 'value'],
  'queue-mode': [(v) => v === 'default' || v === 'lazy', 'queue-mode value'],
};

/** Keys that act on exchanges; every other key acts on queues. */
const EXCHANGE_KEYS: ReadonlySet<string> = new Set(['alternate-exchange', 'delayed-message']);
/** Keys accepted and ignored: mqlite keeps every message in one place whatever the mode. */
const IGNORED_KEYS: ReadonlySet<string> = new Set(['queue-mode']);
/** Keys where a declared argument and a policy both count and the lower wins, as in RabbitMQ. */
const LOWER_WINS: ReadonlySet<string> = new Set([
  'message-ttl',
  'expires',
  'max-length',
  'max-length-bytes',
  'delivery-limit',
  'max-age',
]);
const TARGETS: readonly PolicyTarget[] = ['queues', 'exchanges', 'all'];

/** The policies of a broker, by name. */
export class Policies {
  readonly #policies = new Map<string, { readonly policy: Policy; readonly regex: RegExp }>();
  readonly #vhost: string;

  /**
   * @param stored policies stored before, already validated once.
   * @param vhost the broker's vhost, the one its policies are in.
   */
  constructor(stored: readonly Policy[] = [], vhost = DEFAULT_VHOST) {
    this.#vhost = vhost;
    for (const policy of stored) this.#policies.set(policy.name, compiled({ ...policy, vhost }));
  }

  /**
   * Validates and records a policy, replacing one of the same name; returns it as listed.
   * @throws TypeError for options of the wrong shape; PreconditionFailedError (406) for a
   *   definition RabbitMQ refuses, worded as it words it ("Validation failed: …").
   */
  set(name: unknown, options: PolicyOptions): Policy {
    const policy = checkPolicy(name, options, this.#vhost);
    this.#policies.set(policy.name, compiled(policy));
    return policy;
  }

  /** @throws NotFoundError (404) when there is no such policy. */
  clear(name: unknown): void {
    if (typeof name !== 'string') throw new TypeError('policy name must be a string');
    if (!this.#policies.delete(name)) {
      throw new NotFoundError(`no ${resourceName('policy', name, this.#vhost)}`);
    }
  }

  /** Every policy, in name order. */
  list(): Policy[] {
    return [...this.#policies.values()]
      .map(({ policy }) => policy)
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * The policy that applies to a queue: of those matching its name whose every key the queue's
   * kind acts on (RabbitMQ skips a policy with a key the queue type does not support), the
   * highest priority; between equal priorities, the first by name.
   */
  forQueue(name: string, keys: ReadonlySet<string>): Policy | undefined {
    return this.#match(name, 'queues', (key) => keys.has(key) || EXCHANGE_KEYS.has(key));
  }

  /**
   * The policy that applies to an exchange (the highest priority matching its name); the
   * predeclared `amq.*` exchanges included, as in RabbitMQ.
   */
  forExchange(name: string): Policy | undefined {
    return this.#match(name, 'exchanges', () => true);
  }

  #match(name: string, target: PolicyTarget, applies: (key: string) => boolean) {
    let best: Policy | undefined;
    for (const { policy, regex } of this.#policies.values()) {
      const to = policy['apply-to'];
      if (to !== 'all' && to !== target) continue;
      if (best && !outranks(policy, best)) continue;
      if (!regex.test(name) || !Object.keys(policy.definition).every(applies)) continue;
      best = policy;
    }
    return best;
  }
}

/**
 * The queue arguments in force under a policy: each queue key of the policy as its `x-`
 * argument, the lower of the two for limits (`x-message-ttl`, `x-expires`, `x-max-length`,
 * `x-max-length-bytes`, `x-delivery-limit`, `x-max-age`) and the declared argument otherwise, as
 * RabbitMQ resolves them (a negative delivery limit is none: any limit wins over it).
 */
export function effectiveArguments(
  declared: Readonly<FieldTable>,
  policy: Policy | undefined,
): Readonly<FieldTable> {
  if (!policy) return declared;
  const out: FieldTable = emptyTable();
  Object.assign(out, declared);
  for (const [key, value] of Object.entries(policy.definition)) {
    if (EXCHANGE_KEYS.has(key) || IGNORED_KEYS.has(key) || value === undefined) continue;
    const argument = `x-${key}`;
    const given = out[argument];
    if (given === undefined) out[argument] = value;
    else if (LOWER_WINS.has(key) && lower(key, value, given)) out[argument] = value;
  }
  // A routing key from a policy means nothing without an exchange to dead-letter to.
  if (out['x-dead-letter-exchange'] === undefined) delete out['x-dead-letter-routing-key'];
  return Object.freeze(out);
}

function outranks(policy: Policy, than: Policy): boolean {
  if (policy.priority !== than.priority) return policy.priority > than.priority;
  return policy.name < than.name;
}

function lower(key: string, value: string | number | boolean, given: FieldValue): boolean {
  // A negative delivery limit is none: a limit of either side wins over it, as in RabbitMQ 4.
  if (key === 'delivery-limit' && (Number(value) < 0 || Number(given) < 0)) {
    return Number(given) < 0 && Number(value) >= 0;
  }
  if (key === 'max-age') {
    try {
      return maxAgeExpiry(parseMaxAge(value), 0) < maxAgeExpiry(parseMaxAge(given), 0);
    } catch {
      return false; // a declared value the stream refuses: its declaration reports it
    }
  }
  return Number(value) < Number(given);
}

function compiled(policy: Policy) {
  return { policy, regex: new RegExp(policy.pattern) };
}

function isMaxAge(value: unknown): boolean {
  try {
    parseMaxAge(value);
    return true;
  } catch {
    return false;
  }
}

/** Checks a policy's name and options as RabbitMQ validates `set_policy`. */
export function checkPolicy(
  name: unknown,
  options: PolicyOptions,
  vhost: string = DEFAULT_VHOST,
): Policy {
  if (typeof name !== 'string' || name === '') {
    throw new TypeError('policy name must be a non-empty string');
  }
  if (!isPlainTable(options)) throw new TypeError('policy options must be an object');
  for (const key of Object.keys(options)) {
    if (!['pattern', 'applyTo', 'priority', 'definition'].includes(key)) {
      throw new TypeError(`unknown policy option '${key}'`);
    }
  }
  const { pattern, applyTo = 'all', priority = 0, definition } = options;
  if (typeof pattern !== 'string') throw new TypeError('policy pattern must be a string');
  try {
    new RegExp(pattern);
  } catch (error) {
    throw invalid(
      `pattern should be regular expression but is invalid: ${(error as Error).message}`,
    );
  }
  if (!(TARGETS as readonly unknown[]).includes(applyTo)) {
    throw invalid(
      `apply-to '${String(applyTo)}' unrecognised; should be 'queues', 'exchanges' or 'all'`,
    );
  }
  if (!Number.isSafeInteger(priority)) {
    throw invalid(`${show(priority)} is not a valid priority`);
  }
  if (!isPlainTable(definition)) throw new TypeError('policy definition must be an object');
  const entries = Object.entries(definition).filter(([, v]) => v !== undefined);
  if (entries.length === 0) throw invalid('no policy provided');
  const unknown = entries.filter(([key]) => !Object.hasOwn(KEYS, key));
  if (unknown.length > 0) {
    const listed = unknown.map(([k, v]) => `${JSON.stringify(k)}: ${show(v)}`).join(', ');
    throw invalid(`{${listed}} are not recognised policy settings`);
  }
  const checked: Record<string, string | number | boolean> = emptyTable();
  for (const [key, value] of entries) {
    const [check, what] = KEYS[key as PolicyKey];
    if (!check(value)) throw invalid(`${show(value)} is not a valid ${what}`);
    checked[key] = value as string | number | boolean;
  }
  return {
    name,
    vhost,
    pattern,
    'apply-to': applyTo,
    priority,
    definition: Object.freeze(checked),
  };
}

function invalid(why: string): PreconditionFailedError {
  return new PreconditionFailedError(`Validation failed: ${why}`);
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 60)) : String(value);
}

/** Whether a policy makes an exchange delayed (LavinMQ's `delayed-message: true`). */
export function delaysMessages(policy: Policy | undefined): boolean {
  const value = policy?.definition['delayed-message'];
  return value === true || value === 'true';
}
