/**
 * The broker's own records, kept in a MetaStore of a namespace of its own: one entry per declared
 * queue (`queue:<name>` → its flags and arguments), so that reopening a broker on the same storage
 * declares every queue again and finds its messages. Exchanges and bindings will live beside them
 * under their own prefix.
 */
import { CorruptionError } from '../errors.js';
import { fromJsonTable, toJsonTable } from '../exchanges/field-values.js';
import type { JsonValue, MetaStore } from '../storage/types.js';
import { type Declaration, resolveDeclaration } from './declare-options.js';

/**
 * Name of the broker's namespace. No queue can be named `''` (an empty name makes the broker
 * generate one), so it never collides with a queue's namespace, which is the queue's name.
 */
export const BROKER_NAMESPACE = '';

const QUEUE_PREFIX = 'queue:';

/** A queue declaration as stored. */
interface QueueRecord {
  readonly durable: boolean;
  readonly exclusive: boolean;
  readonly autoDelete: boolean;
  readonly arguments: { readonly [key: string]: JsonValue };
}

/** Declared queues, persisted in the broker namespace's metadata. */
export class QueueRegistry {
  readonly #meta: MetaStore;

  constructor(meta: MetaStore) {
    this.#meta = meta;
  }

  /** Every stored declaration, in name order. */
  load(): Declaration[] {
    const out: Declaration[] = [];
    for (const [key, value] of this.#meta.entries(QUEUE_PREFIX)) {
      const name = key.slice(QUEUE_PREFIX.length);
      out.push(decode(name, value));
    }
    return out;
  }

  /** Records a declaration (applied at once, durable after `sync()`). */
  save(declaration: Declaration): void {
    const record: QueueRecord = {
      durable: declaration.durable,
      exclusive: declaration.exclusive,
      autoDelete: declaration.autoDelete,
      arguments: toJsonTable(declaration.arguments),
    };
    this.#meta.set(QUEUE_PREFIX + declaration.name, record as unknown as JsonValue);
  }

  /** Forgets a queue. */
  remove(name: string): void {
    this.#meta.delete(QUEUE_PREFIX + name);
  }

  sync(): Promise<void> {
    return this.#meta.sync();
  }
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
