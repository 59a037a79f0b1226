/**
 * The broker's own records, kept in a MetaStore of a namespace of its own: one entry per declared
 * queue (`queue:<name>` → its flags and arguments), one per durable exchange
 * (`exchange:<name>` → its declaration and the bindings whose source it is) and one per policy
 * (`policy:<name>`), so that reopening a broker on the same storage declares every queue and
 * exchange again, finds its messages and applies its policies. Data written before policies
 * existed simply holds none.
 */

import stableJson from 'fast-json-stable-stringify';
import { CorruptionError, DataLossError } from '../errors.js';
import { fromJsonTable, toJsonTable } from '../exchanges/field-values.js';
import type { ExchangeRecord, ExchangesSnapshot } from '../exchanges/registry.js';
import type { JsonValue, MetaStore } from '../storage/types.js';
import { emptyTable } from '../table.js';
import { type Declaration, resolveDeclaration } from './declare-options.js';
import { checkPolicy, type Policy } from './policies.js';
import { checkShovel, type ShovelDefinition } from './shovel-definition.js';

/**
 * Name of the broker's namespace. No queue can be named `''` (an empty name makes the broker
 * generate one), so it never collides with a queue's namespace, which is the queue's name.
 */
export const BROKER_NAMESPACE = '';

const QUEUE_PREFIX = 'queue:';
const EXCHANGE_PREFIX = 'exchange:';
const POLICY_PREFIX = 'policy:';
const SHOVEL_PREFIX = 'shovel:';
const SHOVEL_POSITION_PREFIX = 'shovel-position:';

/** A queue declaration as stored. */
interface QueueRecord {
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  readonly arguments: { readonly [key: string]: JsonValue };
  /**
   * Set while the queue is being declared (before its storage exists) or deleted (before its
   * storage is removed): a broker that stops before it is cleared or the record removed never
   * finished either, and the next open deletes the queue, whatever of its storage is there.
   */
  readonly unfinished?: true;
}

/** A stored queue declaration, or why it cannot be read. */
export type StoredQueue =
  | {
      readonly name: string;
      readonly declaration: Declaration;
      /** Its declare or delete did not finish (see `BrokerRegistry.save`). */
      readonly unfinished: boolean;
      readonly error?: undefined;
    }
  | { readonly name: string; readonly declaration?: undefined; readonly error: CorruptionError };

/**
 * Key of a queue's copy of its own declaration, in its namespace's metadata: a queue directory
 * whose entry in the broker's metadata was lost is declared again from it.
 */
const OWN_DECLARATION_KEY = 'broker.declaration';

/** The stored form of a declaration. */
function declarationRecord(declaration: Declaration): JsonValue {
  const record: QueueRecord = {
    durable: declaration.durable,
    exclusive: declaration.exclusive,
    autoDelete: declaration.autoDelete,
    arguments: toJsonTable(declaration.arguments),
  };
  return record as unknown as JsonValue;
}

/** Whether two declarations are stored alike. */
export function sameDeclaration(a: Declaration, b: Declaration): boolean {
  return stableJson(declarationRecord(a)) === stableJson(declarationRecord(b));
}

/**
 * Stores a queue's declaration in its own namespace's metadata; false when it held it already.
 */
export function saveOwnDeclaration(meta: MetaStore, declaration: Declaration): boolean {
  const record = declarationRecord(declaration);
  const stored = meta.get(OWN_DECLARATION_KEY);
  if (stored !== undefined && stableJson(stored) === stableJson(record)) return false;
  meta.set(OWN_DECLARATION_KEY, record);
  return true;
}

/** Removes a queue's declaration from its own namespace's metadata; false when it held none. */
export function forgetOwnDeclaration(meta: MetaStore): boolean {
  if (meta.get(OWN_DECLARATION_KEY) === undefined) return false;
  meta.delete(OWN_DECLARATION_KEY);
  return true;
}

/**
 * The declaration a queue's namespace holds of itself, undefined when it holds none (written by
 * a version that did not keep one).
 *
 * @throws CorruptionError when it is malformed.
 */
export function loadOwnDeclaration(meta: MetaStore, name: string): Declaration | undefined {
  const stored = meta.get(OWN_DECLARATION_KEY);
  return stored === undefined ? undefined : decode(name, stored);
}

/** Declared queues and durable exchanges, persisted in the broker namespace's metadata. */
export class BrokerRegistry {
  readonly #meta: MetaStore;

  constructor(meta: MetaStore) {
    this.#meta = meta;
  }

  /**
   * Every stored declaration, in name order; a record that cannot be read is returned as its
   * error, so that one damaged record costs only its queue.
   */
  load(): StoredQueue[] {
    const out: StoredQueue[] = [];
    for (const [key, value] of this.#meta.entries(QUEUE_PREFIX)) {
      const name = key.slice(QUEUE_PREFIX.length);
      try {
        const unfinished = (value as Partial<QueueRecord> | null)?.unfinished === true;
        out.push({ name, declaration: decode(name, value), unfinished });
      } catch (error) {
        out.push({ name, error: error as CorruptionError });
      }
    }
    return out;
  }

  /**
   * Records a declaration (applied at once, durable after `sync()`); `unfinished` while the
   * queue's storage is being created, so that a crash before the record is saved again finished
   * leaves a queue the next open deletes rather than one whose data is reported missing.
   */
  save(declaration: Declaration, unfinished = false): void {
    const record = declarationRecord(declaration);
    this.#meta.set(QUEUE_PREFIX + declaration.name, unfinished ? unfinishedRecord(record) : record);
  }

  /**
   * Marks the queue `name` as being deleted (see `save`), before its storage is removed; false
   * when it has no record to mark.
   */
  markDeleting(name: string): boolean {
    const record = this.#meta.get(QUEUE_PREFIX + name);
    if (typeof record !== 'object' || record === null || Array.isArray(record)) return false;
    this.#meta.set(QUEUE_PREFIX + name, unfinishedRecord(record));
    return true;
  }

  /**
   * The first damage found when the records were read (skipped, cut, lost or restored from an
   * older file), undefined when they were read whole: then a record may be older than the one
   * lost (an unfinished declare whose finish was lost), so nothing may be deleted on its word.
   */
  damage(): DataLossError | undefined {
    return this.#meta.damage?.[0];
  }

  /** Forgets a queue. */
  remove(name: string): void {
    this.#meta.delete(QUEUE_PREFIX + name);
  }

  /** Every stored exchange, as `Exchanges.fromJSON` takes them. */
  loadExchanges(): ExchangesSnapshot {
    const out: Record<string, ExchangeRecord> = emptyTable();
    for (const [key, value] of this.#meta.entries(EXCHANGE_PREFIX)) {
      const name = key.slice(EXCHANGE_PREFIX.length);
      out[name] = checkExchangeRecord(name, value);
    }
    return out;
  }

  /** Records an exchange, or forgets it when `record` is undefined (nothing to store). */
  saveExchange(name: string, record: ExchangeRecord | undefined): void {
    if (record === undefined) this.#meta.delete(EXCHANGE_PREFIX + name);
    else this.#meta.set(EXCHANGE_PREFIX + name, record as unknown as JsonValue);
  }

  /**
   * Every stored policy; a record that cannot be read is left out and passed to `onDamage` (the
   * policy is then missing, as though cleared, and every other one applies).
   */
  loadPolicies(onDamage: (error: DataLossError) => void): Policy[] {
    const out: Policy[] = [];
    for (const [key, value] of this.#meta.entries(POLICY_PREFIX)) {
      const name = key.slice(POLICY_PREFIX.length);
      const record = value as Partial<Policy> | null;
      try {
        out.push(
          checkPolicy(name, {
            pattern: record?.pattern as string,
            applyTo: record?.['apply-to'] as Policy['apply-to'],
            priority: record?.priority as number,
            definition: record?.definition as Policy['definition'],
          }),
        );
      } catch (cause) {
        onDamage(
          new DataLossError('skipped', `stored policy '${name}' is malformed and was not applied`, {
            cause,
          }),
        );
      }
    }
    return out;
  }

  /** Records a policy (applied at once, durable after `sync()`). */
  savePolicy(policy: Policy): void {
    this.#meta.set(POLICY_PREFIX + policy.name, policy as unknown as JsonValue);
  }

  /** Forgets a policy. */
  removePolicy(name: string): void {
    this.#meta.delete(POLICY_PREFIX + name);
  }

  /**
   * Every stored shovel definition; one that no longer passes the checks is left out and passed
   * to `onDamage`, as a malformed policy is.
   */
  loadShovels(onDamage: (error: DataLossError) => void): [string, ShovelDefinition][] {
    const out: [string, ShovelDefinition][] = [];
    for (const [key, value] of this.#meta.entries(SHOVEL_PREFIX)) {
      const name = key.slice(SHOVEL_PREFIX.length);
      try {
        out.push([name, checkShovel(name, value)]);
      } catch (cause) {
        onDamage(
          new DataLossError('skipped', `stored shovel '${name}' is malformed and was not started`, {
            cause,
          }),
        );
      }
    }
    return out;
  }

  /** Records a shovel's definition (durable after `sync()`). */
  saveShovel(name: string, definition: ShovelDefinition): void {
    this.#meta.set(SHOVEL_PREFIX + name, definition as unknown as JsonValue);
  }

  /** Forgets a shovel, and where it was in a stream. */
  removeShovel(name: string): void {
    this.#meta.delete(SHOVEL_PREFIX + name);
    this.removeShovelPosition(name);
  }

  /** Where a shovel from a stream resumes: an `x-stream-offset`, if it stored one. */
  shovelPosition(name: string): number | undefined {
    const offset = this.#meta.get(SHOVEL_POSITION_PREFIX + name);
    return typeof offset === 'number' ? offset : undefined;
  }

  /** Records where a shovel from a stream resumes (written in the background). */
  saveShovelPosition(name: string, offset: number): void {
    this.#meta.set(SHOVEL_POSITION_PREFIX + name, offset);
  }

  /** Forgets where a shovel was in a stream: it starts where its consumer arguments say. */
  removeShovelPosition(name: string): void {
    this.#meta.delete(SHOVEL_POSITION_PREFIX + name);
  }

  sync(): Promise<void> {
    return this.#meta.sync();
  }
}

function unfinishedRecord(record: JsonValue): JsonValue {
  return { ...(record as { [key: string]: JsonValue }), unfinished: true };
}

function decode(name: string, value: JsonValue): Declaration {
  const record = value as Partial<QueueRecord> | null;
  if (
    typeof record !== 'object' ||
    record === null ||
    typeof record.durable !== 'boolean' ||
    typeof record.exclusive !== 'boolean' ||
    typeof record.autoDelete !== 'boolean' ||
    typeof record.arguments !== 'object' ||
    record.arguments === null ||
    Array.isArray(record.arguments)
  ) {
    throw new CorruptionError(`stored declaration of queue '${name}' is malformed`);
  }
  try {
    // Resolving again rather than storing the kind keeps one source of truth for kind selection.
    const { passive: _passive, ...declaration } = resolveDeclaration(name, {
      durable: record.durable,
      exclusive: record.exclusive,
      autoDelete: record.autoDelete,
      arguments: fromJsonTable(record.arguments),
    });
    return declaration;
  } catch (error) {
    throw new CorruptionError(`stored declaration of queue '${name}' is invalid`, {
      cause: error,
    });
  }
}

function checkExchangeRecord(name: string, value: JsonValue): ExchangeRecord {
  const record = value as Partial<ExchangeRecord> | null;
  const isTable = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (
    !isTable(record) ||
    typeof record?.type !== 'string' ||
    typeof record.durable !== 'boolean' ||
    typeof record.autoDelete !== 'boolean' ||
    typeof record.internal !== 'boolean' ||
    !isTable(record.arguments) ||
    !Array.isArray(record.bindings) ||
    !record.bindings.every(
      (b) =>
        isTable(b) &&
        typeof b.destination === 'string' &&
        typeof b.routingKey === 'string' &&
        isTable(b.args),
    )
  ) {
    throw new CorruptionError(`stored declaration of exchange '${name}' is malformed`);
  }
  return record as ExchangeRecord;
}
